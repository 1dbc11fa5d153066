package guards

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestDecodedIsRoundTrip holds decoded to jsonRoundTrip: where decoded
// answers, the round trip gives the same value.
func TestDecodedIsRoundTrip(t *testing.T) {
	values := []any{
		nil, true, false, "", "Ada", "<&>\u2028\"\\\n", "café 😀", "bad \xff utf8", "\xed\xa0\x80",
		0, -1, 42, math.MaxInt64, math.MinInt64, int64(7), int32(-7), int8(3), uint(3), uint64(math.MaxUint64),
		0.0, math.Copysign(0, -1), 0.5, -2.25, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, math.MaxFloat64,
		math.SmallestNonzeroFloat64, 1.0, 100.0, 0.1, 1.0 / 3, math.NaN(), math.Inf(1), math.Inf(-1), float32(0.5),
		[]string{}, []string(nil), []string{"a", "b"}, []string{"\xff"}, []any{"a"}, map[string]any{}, json.Number("5"),
		make(chan int),
	}
	answered := 0
	for _, v := range values {
		if checkDecoded(t, v) {
			answered++
		}
	}
	if answered < 25 {
		t.Fatalf("decoded answered for %d values only", answered)
	}
}

// FuzzDecodedIsRoundTrip is TestDecodedIsRoundTrip on arbitrary numbers
// and strings.
func FuzzDecodedIsRoundTrip(f *testing.F) {
	f.Add(0.5, int64(3), "Ada")
	f.Add(1e-7, int64(-1), "\xff")
	f.Fuzz(func(t *testing.T, x float64, n int64, s string) {
		checkDecoded(t, x)
		checkDecoded(t, n)
		checkDecoded(t, int(n))
		checkDecoded(t, s)
		checkDecoded(t, []string{s, s})
	})
}

// checkDecoded reports whether decoded answered for v, failing t if it
// answered otherwise than the round trip.
func checkDecoded(t *testing.T, v any) bool {
	t.Helper()
	got, ok := decoded(v)
	if !ok {
		return false
	}
	want, err := jsonRoundTrip(v)
	if err != nil {
		t.Fatalf("decoded(%#v) answered, the round trip fails: %v", v, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded(%#v) = %#v, the round trip gives %#v", v, got, want)
	}
	return true
}
