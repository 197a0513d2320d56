package namenode_test

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
)

// TestNamespaceHashRPC: every namenode answers its own digest with the
// applied index it was taken at; once they converge the three agree, a
// write moves index and hash on each, and a non-superuser is refused.
func TestNamespaceHashRPC(t *testing.T) {
	x := startCluster(t, 3, nil)
	x.leader()
	hashes := func() []*api.NamespaceHashResponse {
		x.converge()
		var out []*api.NamespaceHashResponse
		for i, conn := range x.conns {
			r, err := api.NewAdminClient(conn).NamespaceHash(x.root(), &api.NamespaceHashRequest{})
			if err != nil {
				t.Fatalf("namenode %d: %v", i, err)
			}
			if len(r.Hash) != 32 || r.ServedBy != x.c.Namenode(i).ID() {
				t.Fatalf("namenode %d answered %d-byte hash served by %q", i, len(r.Hash), r.ServedBy)
			}
			out = append(out, r)
		}
		for i, r := range out[1:] {
			if r.AppliedIndex != out[0].AppliedIndex || !bytes.Equal(r.Hash, out[0].Hash) {
				t.Fatalf("converged namenodes differ: %d at %d %x, %d at %d %x", 0, out[0].AppliedIndex, out[0].Hash, i+1, r.AppliedIndex, r.Hash)
			}
		}
		return out
	}
	before := hashes()
	if _, err := x.client(x.leader()).Mkdirs(x.root(), &api.MkdirsRequest{Path: "/h", Parents: true}); err != nil {
		t.Fatal(err)
	}
	after := hashes()
	if after[0].AppliedIndex <= before[0].AppliedIndex || bytes.Equal(after[0].Hash, before[0].Hash) {
		t.Fatalf("a mkdir left index %d -> %d, hash unchanged %v", before[0].AppliedIndex, after[0].AppliedIndex, bytes.Equal(after[0].Hash, before[0].Hash))
	}
	_, err := api.NewAdminClient(x.conns[0]).NamespaceHash(x.as("alice"), &api.NamespaceHashRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("alice asking for the hash: %v, want PermissionDenied", err)
	}
}
