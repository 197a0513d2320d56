package localcluster_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/blockfs/blockfs/client"
)

// TestCreateMakesParents: like HDFS's create, Create makes missing parent
// directories unless NonRecursive asks it to refuse.
func TestCreateMakesParents(t *testing.T) {
	_, cl := startCluster(t, false)
	ctx := ctxT(t)
	if err := cl.WriteFile(ctx, "/a/b/c/file", []byte("x"), client.CreateOptions{}); err != nil {
		t.Fatalf("create under missing parents: %v", err)
	}
	if st, err := cl.Stat(ctx, "/a/b/c"); err != nil || !st.GetIsDir() {
		t.Fatalf("parent not made: %v %v", st, err)
	}
	err := cl.WriteFile(ctx, "/x/y/file", []byte("x"), client.CreateOptions{NonRecursive: true})
	if client.Code(err) != codes.NotFound {
		t.Fatalf("NonRecursive under a missing parent: %v, want NotFound", err)
	}
	if _, err := cl.Stat(ctx, "/x"); client.Code(err) != codes.NotFound {
		t.Fatalf("a refused create left /x behind: %v", err)
	}
}
