package webui

import "testing"

// TestUIHelpers: member links, modes, sizes and breadcrumbs render as the
// pages show them.
func TestUIHelpers(t *testing.T) {
	for _, tc := range []struct{ http, grpc, want string }{
		{"127.0.0.1:9101", "127.0.0.1:9001", "127.0.0.1:9101"},
		{"0.0.0.0:9100", "namenode-1.blockfs-namenode.blockfs.svc:9000", "namenode-1.blockfs-namenode.blockfs.svc:9100"},
		{"[::]:9100", "nn1.example:9000", "nn1.example:9100"},
		{":9100", "nn1.example:9000", "nn1.example:9100"},
	} {
		if got := httpHost(tc.http, tc.grpc); got != tc.want {
			t.Errorf("httpHost(%s, %s) = %s, want %s", tc.http, tc.grpc, got, tc.want)
		}
	}
	for _, tc := range []struct {
		dir  bool
		mode uint32
		want string
	}{{true, 0o755, "drwxr-xr-x"}, {false, 0o640, "-rw-r-----"}, {true, 0o1777, "drwxrwxrwt"}, {true, 0o1770, "drwxrwx--T"}} {
		if got := permString(tc.dir, tc.mode); got != tc.want {
			t.Errorf("permString(%v, %o) = %s, want %s", tc.dir, tc.mode, got, tc.want)
		}
	}
	for _, tc := range []struct {
		b    uint64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1536, "1.5 KiB"}, {64 << 30, "64.0 GiB"}} {
		if got := humanBytes(tc.b); got != tc.want {
			t.Errorf("humanBytes(%d) = %s, want %s", tc.b, got, tc.want)
		}
	}
	if got := crumbs("/a/b"); len(got) != 3 || got[2] != (crumb{"b", "/a/b"}) || got[0].Path != "/" {
		t.Errorf("crumbs(/a/b) = %v", got)
	}
	p := page{user: "a b"}
	if got := p.Browse("/x?y/#z"); got != "/browse/x%3Fy/%23z?user.name=a+b" {
		t.Errorf("Browse = %s", got)
	}
}
