package loopback

import "testing"

func TestIs(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"0.0.0.0": false, "10.0.0.1": false, "example.com": false, "": false, "localhost.example.com": false} {
		if got := Is(host); got != want {
			t.Errorf("Is(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestHost(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:80": "127.0.0.1", "[::1]:9090": "::1", "[::1]": "::1", "localhost": "localhost"} {
		if got := Host(in); got != want {
			t.Errorf("Host(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBeyond(t *testing.T) {
	for _, tc := range []struct{ addr, where, err string }{
		{"127.0.0.1:0", "", ""},
		{"localhost:8080", "", ""},
		{"[::1]:0", "", ""},
		{"0.0.0.0:80", "0.0.0.0", ""},
		{"10.1.2.3:80", "10.1.2.3", ""},
		{":80", "every interface", ""},
		{"nohost", "", "address nohost: missing port in address"},
	} {
		where, err := Beyond(tc.addr)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if where != tc.where || got != tc.err {
			t.Errorf("Beyond(%q) = %q, %q; want %q, %q", tc.addr, where, got, tc.where, tc.err)
		}
	}
}
