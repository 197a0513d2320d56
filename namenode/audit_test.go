package namenode_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/testutil/syncbuf"
	"github.com/blockfs/blockfs/namenode"
)

// TestAuditLog: every namespace operation is one audit line, in HDFS's
// shape, on the namenode that served it (a follower forwarding a write
// logs it, the leader does not log it again), refusals included, and
// failures that are not refusals are not logged.
func TestAuditLog(t *testing.T) {
	outs := make([]*syncbuf.Buffer, 3)
	x := startCluster(t, 3, func(i int, c *namenode.Config) {
		outs[i] = &syncbuf.Buffer{}
		c.Audit.Output, c.Audit.FlushInterval = outs[i], 10*time.Millisecond
	})
	l, f := x.leader(), x.follower()
	lc, fc := x.client(l), x.client(f)
	steps := []struct {
		on   int
		call func() error
	}{
		{l, func() error {
			_, err := lc.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/data", Mode: 0o755, Parents: true})
			return err
		}},
		// Forwarded by the follower: logged there only.
		{f, func() error {
			_, err := fc.Create(x.root(), &api.CreateRequest{Path: "/data/x", Mode: 0o640, Replication: 1})
			return err
		}},
		// Refused: alice may not write in /data.
		{l, func() error {
			_, err := lc.Create(x.as("alice"), &api.CreateRequest{Path: "/data/y", Replication: 1})
			if status.Code(err) != codes.PermissionDenied {
				t.Errorf("alice's create: %v, want PermissionDenied", err)
			}
			return nil
		}},
		// Not found is not a refusal: not logged.
		{l, func() error {
			_, err := lc.GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: "/nope"})
			if status.Code(err) != codes.NotFound {
				t.Errorf("stat /nope: %v, want NotFound", err)
			}
			return nil
		}},
		{l, func() error {
			_, err := lc.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/data/x", Length: 1})
			return err
		}},
		{l, func() error {
			_, err := lc.Rename(x.root(), &api.RenameRequest{Src: "/data/x", Dst: "/data/z"})
			return err
		}},
	}
	for i, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := map[int][]string{
		l: {
			"allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=mkdirs\tsrc=/data\tdst=null\tperm=null\tproto=rpc",
			"allowed=false\tugi=alice (auth:SIMPLE)\tip=/127.0.0.1\tcmd=create\tsrc=/data/y\tdst=null\tperm=null\tproto=rpc",
			"allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=open\tsrc=/data/x\tdst=null\tperm=null\tproto=rpc",
			"allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=rename\tsrc=/data/x\tdst=/data/z\tperm=null\tproto=rpc",
		},
		f: {
			"allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=create\tsrc=/data/x\tdst=null\tperm=root:supergroup:rw-r-----\tproto=rpc",
		},
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, w := range want {
		var got []string
		for {
			got = nil
			for _, line := range outs[i].Lines() {
				_, fields, ok := strings.Cut(line, " INFO FSNamesystem.audit: ")
				if !ok {
					t.Fatalf("namenode %d: line %q is not an audit line", i, line)
				}
				got = append(got, fields)
			}
			if len(got) >= len(w) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("namenode %d logged\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
	for i := range outs {
		if _, ok := want[i]; !ok && len(outs[i].Lines()) != 0 {
			t.Errorf("namenode %d served nothing but logged %q", i, outs[i].Lines())
		}
	}
}
