package localcluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// capture is a client whose PutFile requests (after any change) and
// connection are kept, to send them again by hand.
type capture struct {
	cl     *client.Client
	mu     sync.Mutex
	puts   []*api.PutFileRequest
	putMD  metadata.MD // the last PutFile's outgoing metadata (client and call id)
	preps  int         // PrepareFile calls
	prepBy string      // the namenode that served the last PrepareFile
	cc     *grpc.ClientConn
	change func(*api.PutFileRequest)
}

func (k *capture) last() *api.PutFileRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return proto.Clone(k.puts[len(k.puts)-1]).(*api.PutFileRequest)
}

// resend sends r as a call of its own (no retry cache entry to answer it).
func (k *capture) resend(ctx context.Context, r *api.PutFileRequest) error {
	_, err := api.NewClientServiceClient(k.cc).PutFile(ctx, r)
	return errs.FromStatus(err, nil)
}

func newCapture(t *testing.T, c *localcluster.Cluster, user string) *capture {
	t.Helper()
	cfg, err := c.ClientConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	k := &capture{}
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		k.mu.Lock()
		if _, ok := req.(*api.PrepareFileRequest); ok {
			k.preps++
		}
		if r, ok := req.(*api.PutFileRequest); ok {
			if k.change != nil {
				k.change(r)
			}
			k.puts = append(k.puts, proto.Clone(r).(*api.PutFileRequest))
			k.putMD, _ = metadata.FromOutgoingContext(ctx)
		}
		if k.cc == nil || cc.Target() == c.NamenodeAddrs()[c.Leader()] {
			k.cc = cc
		}
		k.mu.Unlock()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if r, ok := reply.(*api.PrepareFileResponse); ok && err == nil {
			k.mu.Lock()
			k.prepBy = r.GetHeader().GetServedBy()
			k.mu.Unlock()
		}
		return err
	}))
	if k.cl, err = client.New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.cl.Close() })
	if _, err := k.cl.Stat(context.Background(), "/"); err != nil { // a connection for resend
		t.Fatal(err)
	}
	return k
}

// TestPutFile: a small file made in one Raft entry reads back whole, on
// its first replica's receipts alone (the datanodes' reports are held back far
// longer than a Complete waits); the PutFile that made it cannot make it
// again, nor anything after the file is deleted, nor for another user,
// nor with its block or inode changed; a refused PutFile creates nothing.
func TestPutFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startHeldReports(t, ctx, func(nc *namenode.Config) {
		nc.Namespace.CompleteWait = 300 * time.Millisecond
		nc.Blocks.UnknownReplicaGrace = 8 * time.Second // PutFile's deadline: 4 s after the token's issue
	})
	root, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := root.Mkdirs(ctx, "/pf", 0o777, true); err != nil {
		t.Fatal(err)
	}
	if err := root.SetPermission(ctx, "/pf", 0o777); err != nil {
		t.Fatal(err)
	}
	alice, bob := newCapture(t, c, "alice"), newCapture(t, c, "bob")
	opts := client.CreateOptions{Replication: 3, BlockSize: blockSize}

	data := randBytes(700)
	if err := alice.cl.PutFile(ctx, "/pf/a", data, opts); err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	readBack(t, alice.cl, "/pf/a", data)
	st, err := alice.cl.Stat(ctx, "/pf/a")
	if err != nil || st.Owner != "alice" || st.Length != 700 {
		t.Fatalf("status %v, %v: want alice's complete file of 700 bytes", st, err)
	}
	// PutFile went once the first replica was stored (MinReplication 1),
	// with that replica's receipts; the others are the datanodes' reports'.
	if locs, err := alice.cl.GetBlockLocations(ctx, "/pf/a", 0, 0); err != nil || len(locs.Blocks) != 1 || len(locs.Blocks[0].Locations) < 1 {
		t.Fatalf("locations %s, %v: want the first replicas on their receipts", describe(locs), err)
	}
	put := alice.last()
	if got := len(put.Receipts); got < 3 {
		t.Fatalf("PutFile carried %d receipts, want one per replica and namenode", got)
	}

	t.Run("a retry of the call that made it", func(t *testing.T) {
		alice.mu.Lock()
		md := alice.putMD.Copy()
		alice.mu.Unlock()
		resp, err := api.NewClientServiceClient(alice.cc).PutFile(metadata.NewOutgoingContext(ctx, md), proto.Clone(put).(*api.PutFileRequest))
		if err != nil || resp.GetStatus().GetInodeId() != put.InodeId {
			t.Fatalf("retried PutFile: %v, %v; want the first answer again", resp, err)
		}
	})
	refusals := []struct {
		name   string
		by     *capture
		change func(r *api.PutFileRequest)
		want   errs.Kind
	}{
		{"the same PutFile again", alice, nil, errs.Precondition},
		{"again under another path", alice, func(r *api.PutFileRequest) { r.Create.Path = "/pf/a2" }, errs.Precondition},
		{"by another user", bob, func(r *api.PutFileRequest) { r.Create.Path = "/pf/b" }, errs.Permission},
		{"with another block id", alice, func(r *api.PutFileRequest) { r.Create.Path = "/pf/a3"; r.Block.Id++ }, errs.Permission},
		{"with another inode", alice, func(r *api.PutFileRequest) { r.Create.Path = "/pf/a4"; r.InodeId++ }, errs.Permission},
		{"with the token cut", alice, func(r *api.PutFileRequest) { r.Create.Path = "/pf/a5"; r.Token = r.Token[:len(r.Token)-3] }, errs.Unauthenticated},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := proto.Clone(put).(*api.PutFileRequest)
			if tc.change != nil {
				tc.change(r)
			}
			if err := tc.by.resend(ctx, r); errs.KindOf(err) != tc.want {
				t.Fatalf("PutFile: %v (kind %v), want %v", err, errs.KindOf(err), tc.want)
			}
			if _, err := root.Stat(ctx, r.Create.Path); r.Create.Path != "/pf/a" && !errs.Is(err, errs.NotFound) {
				t.Fatalf("after the refusal %s: %v, want no file", r.Create.Path, err)
			}
		})
	}
	t.Run("after the file is deleted", func(t *testing.T) {
		if err := alice.cl.Delete(ctx, "/pf/a", false); err != nil {
			t.Fatal(err)
		}
		if err := alice.resend(ctx, proto.Clone(put).(*api.PutFileRequest)); !errs.Is(err, errs.Precondition) {
			t.Fatalf("PutFile of a deleted file's ids: %v, want Precondition", err)
		}
	})
	t.Run("exists", func(t *testing.T) {
		if err := bob.cl.PutFile(ctx, "/pf/b", data, opts); err != nil {
			t.Fatal(err)
		}
		if err := bob.cl.PutFile(ctx, "/pf/b", randBytes(10), opts); !errs.Is(err, errs.Exist) {
			t.Fatalf("second PutFile without Overwrite: %v, want Exist", err)
		}
		o := opts
		o.Overwrite = true
		next := randBytes(20)
		if err := bob.cl.PutFile(ctx, "/pf/b", next, o); err != nil {
			t.Fatalf("PutFile with Overwrite: %v", err)
		}
		readBack(t, bob.cl, "/pf/b", next)
		if err := alice.cl.PutFile(ctx, "/pf/b", data, o); !errs.Is(err, errs.Permission) {
			t.Fatalf("alice overwriting bob's file: %v, want Permission", err)
		}
	})
	t.Run("larger than a side-by-side block", func(t *testing.T) {
		cfg, err := c.ClientConfig("bob")
		if err != nil {
			t.Fatal(err)
		}
		cfg.FanOutMax = 100
		cl, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		big := randBytes(500) // one block (of 1 KiB), written as WriteFile writes it
		if err := cl.PutFile(ctx, "/pf/big", big, opts); err != nil {
			t.Fatal(err)
		}
		readBack(t, cl, "/pf/big", big)
	})
	t.Run("prepared ahead", func(t *testing.T) {
		k := newCapture(t, c, "carol")
		misses, _ := verifyCounts(t, c)
		for i := range 8 { // PrepareAhead's default: one call for all
			if err := k.cl.PutFile(ctx, fmt.Sprintf("/pf/c%d", i), data, opts); err != nil {
				t.Fatal(err)
			}
		}
		k.mu.Lock()
		preps := k.preps
		k.mu.Unlock()
		if preps != 1 {
			t.Fatalf("%d PrepareFile calls for 8 files, want 1", preps)
		}
		// One token for the run: each datanode checks its signature once
		// for the 8 blocks it stores (24 writes, at most 3 misses).
		if m, _ := verifyCounts(t, c); m-misses > 3 {
			t.Fatalf("%v signature checks on the datanodes for 8 files of one run, want at most 3", m-misses)
		}
		_, err := api.NewClientServiceClient(k.cc).PrepareFile(ctx, &api.PrepareFileRequest{Create: &api.CreateRequest{Path: "/pf/x"}, Count: 17})
		if err = errs.FromStatus(err, nil); !errs.Is(err, errs.Invalid) {
			t.Fatalf("PrepareFile of 17: %v, want Invalid", err)
		}
	})
	t.Run("past its deadline", func(t *testing.T) {
		k := newCapture(t, c, "dave")
		var once sync.Once // each attempt has a deadline of its own: sleep before the first only
		k.change = func(*api.PutFileRequest) { once.Do(func() { time.Sleep(5 * time.Second) }) }
		err := k.cl.PutFile(ctx, "/pf/late", data, opts)
		if !errs.Is(err, errs.Permission) {
			t.Fatalf("PutFile 5 s after its token's issue, with half the grace 4 s: %v, want Permission", err)
		}
		if _, err := root.Stat(ctx, "/pf/late"); !errs.Is(err, errs.NotFound) {
			t.Fatalf("after the refusal: %v, want no file", err)
		}
	})
	// Last: the client moves on to another namenode after this one.
	t.Run("no receipts", func(t *testing.T) {
		alice.change = func(r *api.PutFileRequest) { r.Receipts = nil }
		defer func() { alice.change = nil }()
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
		defer wcancel()
		err := alice.cl.PutFile(wctx, "/pf/noreceipts", data, opts)
		if k := errs.KindOf(err); k != errs.Timeout && k != errs.Unavailable {
			t.Fatalf("PutFile with no receipts and no reports: %v (kind %v), want it to give up waiting for a replica", err, k)
		}
		if _, err := root.Stat(ctx, "/pf/noreceipts"); !errs.Is(err, errs.NotFound) {
			t.Fatalf("after the refusal: %v, want no file", err)
		}
	})
}

// TestPutFileAfterFailover: files prepared by a namenode that then
// stopped (the leader, usually: the client moves to it) are still made: the reservation is in the
// log, the token under a key every namenode knows, and the replicas,
// whose receipts were for the stopped namenode's key, are counted on the
// datanodes' reports.
func TestPutFileAfterFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 3, Datanodes: 3, Dir: t.TempDir(), MTLS: true,
		Namenode: func(i int, nc *namenode.Config) { nc.Namespace.DefaultBlockSize = 2 * blockSize }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	k := newCapture(t, c, "root")
	opts := client.CreateOptions{Replication: 3, BlockSize: blockSize}

	// Through a follower only: it reserves its ids through the leader (a
	// forwarded ReserveIds) and forwards the PutFile.
	lead, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fcfg, err := c.ClientConfig("root")
	if err != nil {
		t.Fatal(err)
	}
	fcfg.Namenodes = []string{c.NamenodeAddrs()[(lead+1)%3]}
	fl, err := client.New(fcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	viaFollower := randBytes(200)
	if err := fl.PutFile(ctx, "/fo/follower", viaFollower, opts); err != nil {
		t.Fatalf("PutFile through a follower: %v", err)
	}
	readBack(t, fl, "/fo/follower", viaFollower)

	first := randBytes(300)
	if err := k.cl.PutFile(ctx, "/fo/a", first, opts); err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	by := k.prepBy
	k.mu.Unlock()
	old := -1
	for i, nn := range c.Namenodes() {
		if nn.ID() == by {
			old = i
		}
	}
	if old < 0 {
		t.Fatalf("PrepareFile served by %q, no namenode of the cluster", by)
	}
	if err := c.StopNamenode(old); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	second := randBytes(400)
	if err := k.cl.PutFile(ctx, "/fo/b", second, opts); err != nil {
		t.Fatalf("PutFile of a file the stopped leader prepared: %v", err)
	}
	k.mu.Lock()
	preps := k.preps
	k.mu.Unlock()
	if preps != 1 {
		t.Fatalf("%d PrepareFile calls, want 1: the second file must be one the old leader prepared", preps)
	}
	readBack(t, k.cl, "/fo/a", first)
	readBack(t, k.cl, "/fo/b", second)

	// Larger than the namenode's default block size, which the client
	// learns from PrepareFile: written as WriteFile writes it, in blocks.
	big := randBytes(5 * blockSize)
	if err := k.cl.PutFile(ctx, "/fo/big", big, client.CreateOptions{Replication: 3}); err != nil {
		t.Fatalf("PutFile of 3 default blocks: %v", err)
	}
	if locs, err := k.cl.GetBlockLocations(ctx, "/fo/big", 0, 0); err != nil || len(locs.Blocks) != 3 {
		t.Fatalf("locations %s, %v: want 3 blocks of 2 KiB", describe(locs), err)
	}
	readBack(t, k.cl, "/fo/big", big)
}
