package era

import "testing"

func TestLegacyHTTPStatus(t *testing.T) {
	for status, legacy := range map[int]bool{
		200: false, 202: false, 301: false,
		400: true, 401: true, 404: true, 405: true, 406: true, 499: true,
		500: false, 502: false, 503: false,
	} {
		if got := LegacyHTTPStatus(status); got != legacy {
			t.Errorf("LegacyHTTPStatus(%d) = %v, want %v", status, got, legacy)
		}
	}
}
