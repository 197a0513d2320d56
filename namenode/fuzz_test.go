package namenode_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// fuzzNN is the one-namenode cluster FuzzClientRequests runs against,
// started once per process and closed by the fuzz target's cleanup.
var (
	fuzzOnce sync.Once
	fuzzCl   *localcluster.Cluster
	fuzzErr  error
)

// allowedKinds are the errors a request validator may answer with. An
// Internal or Unknown error (or a panic) on any input is a bug.
var allowedCodes = map[codes.Code]bool{
	codes.OK: true, codes.InvalidArgument: true, codes.NotFound: true, codes.AlreadyExists: true,
	codes.PermissionDenied: true, codes.FailedPrecondition: true, codes.Unavailable: true,
	codes.ResourceExhausted: true, codes.Aborted: true, codes.OutOfRange: true, codes.Unimplemented: true,
	codes.DeadlineExceeded: true, codes.Canceled: true,
}

// FuzzClientRequests feeds arbitrary paths, modes, offsets, lengths, ids
// and flags to every ClientService handler of a live single-node namenode
// (called in-process through ClientServer, so the gRPC layer cannot hide
// a panic). No handler may panic or answer Internal/Unknown.
func FuzzClientRequests(f *testing.F) {
	f.Add("/a", "/b", uint32(0o644), uint64(0), uint64(10), uint64(1), uint32(3), "alice", false)
	f.Add("", "", uint32(0), uint64(0), uint64(0), uint64(0), uint32(0), "", true)
	f.Add("/a/../b", "//x", uint32(0o7777), ^uint64(0), ^uint64(0), ^uint64(0), ^uint32(0), "root", true)
	f.Add("/a\x00b", "/.", uint32(0o1777), uint64(1)<<63, uint64(1), uint64(2), uint32(33), "nobody", false)
	f.Add("relative/path", "/", uint32(0o400), uint64(5), uint64(5), uint64(1), uint32(1), "bob", true)
	f.Fuzz(func(t *testing.T, p, q string, mode uint32, off, n, id uint64, repl uint32, user string, flag bool) {
		fuzzOnce.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fuzzCl, fuzzErr = localcluster.Start(ctx, localcluster.Config{Namenodes: 1})
		})
		if fuzzErr != nil {
			t.Fatal(fuzzErr)
		}
		nn := fuzzCl.Namenode(0)
		s := nn.ClientServer()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(namenode.UserKey, user))
		blk := &api.Block{Id: id, GenStamp: off, Length: n}
		// MinAppliedIndex stays 0: a follower-style wait for an index the
		// node never reaches would only burn the deadline.
		ro := &api.ReadOptions{Consistency: api.ReadConsistency(repl % 3)}
		calls := []struct {
			name string
			call func() error
		}{
			{"Mkdirs", func() error {
				_, err := s.Mkdirs(ctx, &api.MkdirsRequest{Path: p, Mode: mode, Parents: flag})
				return err
			}},
			{"Create", func() error {
				_, err := s.Create(ctx, &api.CreateRequest{Path: p, Mode: mode, Overwrite: flag, CreateParent: !flag,
					Replication: repl, BlockSize: n, ClientName: user})
				return err
			}},
			{"AddBlock", func() error {
				_, err := s.AddBlock(ctx, &api.AddBlockRequest{Path: p, InodeId: id, Previous: blk, ExcludeNodes: []string{q}})
				return err
			}},
			{"Complete", func() error {
				_, err := s.Complete(ctx, &api.CompleteRequest{Path: p, InodeId: id, Blocks: []*api.Block{blk, nil}})
				return err
			}},
			{"AbandonBlock", func() error {
				_, err := s.AbandonBlock(ctx, &api.AbandonBlockRequest{Path: p, InodeId: id, Block: blk})
				return err
			}},
			{"GetBlockLocations", func() error {
				_, err := s.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: p, Offset: off, Length: n, Read: ro})
				return err
			}},
			{"GetFileInfo", func() error { _, err := s.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: p, Read: ro}); return err }},
			{"ListStatus", func() error {
				_, err := s.ListStatus(ctx, &api.ListStatusRequest{Path: p, StartAfter: q, Limit: repl, Read: ro})
				return err
			}},
			{"Rename", func() error { _, err := s.Rename(ctx, &api.RenameRequest{Src: p, Dst: q}); return err }},
			{"SetPermission", func() error {
				_, err := s.SetPermission(ctx, &api.SetPermissionRequest{Path: p, Mode: mode})
				return err
			}},
			{"SetOwner", func() error {
				_, err := s.SetOwner(ctx, &api.SetOwnerRequest{Path: p, Owner: q, Group: user})
				return err
			}},
			{"ReportBadBlocks", func() error {
				_, err := s.ReportBadBlocks(ctx, &api.ReportBadBlocksRequest{DatanodeId: q, Blocks: []*api.Block{blk}})
				return err
			}},
			{"Delete", func() error { _, err := s.Delete(ctx, &api.DeleteRequest{Path: p, Recursive: flag}); return err }},
			{"ClusterStatus", func() error { _, err := s.ClusterStatus(ctx, &api.ClusterStatusRequest{}); return err }},
		}
		for _, c := range calls {
			err := c.call()
			if err == nil {
				continue
			}
			code := status.Code(errs.ToStatus(err))
			if !allowedCodes[code] {
				t.Fatalf("%s(p=%q q=%q mode=%#o off=%d n=%d id=%d repl=%d user=%q flag=%v): %v (code %v)",
					c.name, p, q, mode, off, n, id, repl, user, flag, err, code)
			}
		}
	})
	f.Cleanup(func() {
		if fuzzCl != nil {
			fuzzCl.Close()
		}
	})
}
