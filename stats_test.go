package conduit

import (
	"reflect"
	"testing"
)

// addStats must sum every counter: a field added to Stats and forgotten
// there would restart at zero on each session renewal.
func TestAddStatsSumsEveryField(t *testing.T) {
	var a, b, want Stats
	for i := range reflect.TypeFor[Stats]().NumField() {
		reflect.ValueOf(&a).Elem().Field(i).SetInt(int64(i + 1))
		reflect.ValueOf(&b).Elem().Field(i).SetInt(100)
		reflect.ValueOf(&want).Elem().Field(i).SetInt(int64(i + 101))
	}
	if got := addStats(a, b); got != want {
		t.Errorf("addStats(%+v, %+v) = %+v, want %+v", a, b, got, want)
	}
}
