package raftnet_test

import (
	"net"
	"testing"

	"github.com/blockfs/blockfs/internal/node/raftnet"
)

// TestAdvertise: a layer with Advertise gives Raft that name as its
// address, one without gives the listener's.
func TestAdvertise(t *testing.T) {
	for _, tc := range []struct{ name, advertise, want string }{
		{"listener address", "", ""},
		{"stable name", "namenode-0.blockfs-namenode.blockfs.svc:7000", "namenode-0.blockfs-namenode.blockfs.svc:7000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l, err := raftnet.New(lis, raftnet.Options{Advertise: tc.advertise})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			want := tc.want
			if want == "" {
				want = lis.Addr().String()
			}
			if got := l.Addr(); got.String() != want || got.Network() != "tcp" {
				t.Fatalf("Addr() = %s %q, want tcp %q", got.Network(), got, want)
			}
		})
	}
}
