package localcluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
)

// heldStream is a client stream whose messages are received only once
// release is closed (or the stream's context ends).
type heldStream struct {
	grpc.ClientStream
	release <-chan struct{}
}

func (s heldStream) RecvMsg(m any) error {
	select {
	case <-s.release:
	case <-s.Context().Done():
	}
	return s.ClientStream.RecvMsg(m)
}

// TestPutFileOnFirstReplicas: PutFile goes to the namenode as soon as the
// replicas it needs (MinReplication, 1 here) are stored, while a slower
// replica is still being written, naming it as still writing (so the
// leader does not re-replicate the block meanwhile), and returns only
// once that replica is done too; the slow replica is reported and listed
// afterwards. The slow
// datanode's acks reach the client only after PutFile was applied: a
// client that waited for every replica first would never send PutFile.
func TestPutFileOnFirstReplicas(t *testing.T) {
	c, root := startCluster(t, false)
	ctx := ctxT(t)
	if err := root.Mkdirs(ctx, "/early", 0o777, true); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.ClientConfig("root")
	if err != nil {
		t.Fatal(err)
	}
	slow, slowID := c.DatanodeAddrs()[0], c.DatanodeID(0)
	var (
		mu       sync.Mutex
		events   []string
		release  chan struct{}
		receipts int
		writing  []string
	)
	note := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	cfg.DialOptions = append(cfg.DialOptions,
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			s, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil || method != api.DataService_WriteBlock_FullMethodName || cc.Target() != slow {
				return s, err
			}
			note("held")
			mu.Lock()
			defer mu.Unlock()
			return heldStream{ClientStream: s, release: release}, nil
		}),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if r, ok := req.(*api.PutFileRequest); ok {
				note(fmt.Sprintf("applied %v", err == nil))
				mu.Lock()
				receipts, writing = len(r.Receipts), r.Writing
				close(release)
				mu.Unlock()
			}
			return err
		}))
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })

	data := randBytes(900)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// Each file's 3 datanodes are chosen from 5: write until one is placed
	// on the slow datanode.
	for i := range 40 {
		p := fmt.Sprintf("/early/f%d", i)
		mu.Lock()
		events, release = nil, make(chan struct{})
		mu.Unlock()
		if err := cl.PutFile(wctx, p, data, client.CreateOptions{Replication: 3, BlockSize: blockSize}); err != nil {
			t.Fatalf("PutFile %s: %v", p, err)
		}
		note("returned")
		mu.Lock()
		got, n, w := slices.Clone(events), receipts, writing
		mu.Unlock()
		if got[0] != "held" {
			continue
		}
		if want := []string{"held", "applied true", "returned"}; !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v: PutFile applied while a replica was held, then the return", got, want)
		}
		if n == 0 || n > 2*3 {
			t.Fatalf("PutFile carried %d receipts: want those of the first replicas only (one per namenode each)", n)
		}
		if !slices.Contains(w, slowID) {
			t.Fatalf("PutFile named %v as still writing: want the slow datanode %s among them", w, slowID)
		}
		readBack(t, cl, p, data)
		if locs := waitReplicas(t, cl, p, 3); !slices.ContainsFunc(locs.Blocks[0].Locations, func(l *api.DatanodeInfo) bool { return l.Addr == slow }) {
			t.Fatalf("locations %s: want the slow datanode %s among them", describe(locs), slow)
		}
		return
	}
	t.Fatal("no file of 40 was placed on the slow datanode")
}

// TestPutFileNotReReplicated: under concurrent PutFiles, each going once
// its first replica is stored, the leader never finds a block
// under-replicated in the moment before the other replicas' reports
// arrive (they are on their way from the apply on), so it orders no
// replication or verification of blocks being written.
func TestPutFileNotReReplicated(t *testing.T) {
	c, root := startCluster(t, false)
	ctx := ctxT(t)
	if err := root.Mkdirs(ctx, "/many", 0o777, true); err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int64 // the most blocks found under-replicated at once
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
			if i := c.Leader(); i >= 0 {
				if n := int64(c.Namenode(i).Blocks().Stats().UnderReplicated); n > seen.Load() {
					seen.Store(n)
				}
			}
		}
	}()
	data := randBytes(1000)
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			for i := range 60 {
				if err := root.PutFile(ctx, fmt.Sprintf("/many/%d-%d", g, i), data, client.CreateOptions{Replication: 3, BlockSize: blockSize}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	if n := seen.Load(); n > 0 {
		t.Fatalf("the leader found up to %d blocks under-replicated while their replicas were being written", n)
	}
}
