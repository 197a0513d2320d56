package security

import "testing"

func TestHTTPOrigin(t *testing.T) {
	cases := []struct {
		pattern, remote, proto, addr string
	}{
		{"GET /webhdfs/v1/", "127.0.0.1:5000", "webhdfs", "127.0.0.1:5000"},
		{"PUT /webhdfs/v1/", "[::1]:6000", "webhdfs", "[::1]:6000"},
		{"GET /browse/{path...}", "127.0.0.1:7000", "http", "127.0.0.1:7000"},
		{"GET /browse/{path...}", "not an address", "http", ""},
	}
	for _, c := range cases {
		o := httpOrigin(c.pattern, c.remote)
		got := ""
		if o.Addr != nil {
			got = o.Addr.String()
		}
		if o.Proto != c.proto || got != c.addr {
			t.Errorf("httpOrigin(%q, %q) = %s %q, want %s %q", c.pattern, c.remote, o.Proto, got, c.proto, c.addr)
		}
	}
}
