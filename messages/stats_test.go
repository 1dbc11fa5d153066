package messages

import (
	"reflect"
	"testing"
)

// Add sums every field: a counter added to Stats later is summed too.
func TestStatsAdd(t *testing.T) {
	var a, b, want Stats
	va, vb, vw := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem(), reflect.ValueOf(&want).Elem()
	for i := range va.NumField() {
		va.Field(i).SetInt(int64(i + 1))
		vb.Field(i).SetInt(int64(100 * (i + 1)))
		vw.Field(i).SetInt(int64(101 * (i + 1)))
	}
	if got := a.Add(b); got != want {
		t.Fatalf("a.Add(b) = %+v, want %+v", got, want)
	}
	if a.ServerRequests != 1 || a.Busy != 2 {
		t.Fatal("Add changed its receiver")
	}
}
