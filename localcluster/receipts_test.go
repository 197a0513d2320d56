package localcluster_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// startHeldReports starts an mTLS cluster of 3 namenodes (set up by nn)
// and 3 datanodes whose incremental reports wait an hour: far longer than
// any Complete or PutFile waits, so replicas count only on receipts.
func startHeldReports(t *testing.T, ctx context.Context, nn func(*namenode.Config)) *localcluster.Cluster {
	t.Helper()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 3, Datanodes: 3, Dir: t.TempDir(), MTLS: true,
		Namenode: func(i int, nc *namenode.Config) { nn(nc) },
		Datanode: func(i int, dc *datanode.Config) {
			dc.IncrementalReportDelay = time.Hour
			dc.FollowerReportDelay = time.Hour
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCompleteTakesReceipts: with the datanodes' incremental reports held
// back far longer than a Complete waits, a file still completes on its
// replicas' receipts, and the leader lists them at once; a Complete whose
// receipts were taken away, altered, or moved to another datanode finds
// no replica and fails, as it would with no receipts at all.
func TestCompleteTakesReceipts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := startHeldReports(t, ctx, func(nc *namenode.Config) { nc.Namespace.CompleteWait = 200 * time.Millisecond })

	cases := []struct {
		name   string
		tamper func(rs []*api.Receipt) []*api.Receipt
		ok     bool
	}{
		{"receipts as the datanodes made them", nil, true},
		{"no receipts", func([]*api.Receipt) []*api.Receipt { return nil }, false},
		{"MACs altered", func(rs []*api.Receipt) []*api.Receipt {
			for _, r := range rs {
				r.Mac[0] ^= 1
			}
			return rs
		}, false},
		{"behind 64 others", func(rs []*api.Receipt) []*api.Receipt {
			junk := make([]*api.Receipt, 64)
			for i := range junk {
				junk[i] = &api.Receipt{DatanodeId: "dn-none", KeyId: uint64(i), Mac: make([]byte, 32)}
			}
			return append(junk, rs...)
		}, false},
		{"each moved to another datanode", func(rs []*api.Receipt) []*api.Receipt {
			ids := []string{c.DatanodeID(0), c.DatanodeID(1), c.DatanodeID(2)}
			for _, r := range rs {
				for i, id := range ids {
					if r.DatanodeId == id {
						r.DatanodeId = ids[(i+1)%3]
						break
					}
				}
			}
			return rs
		}, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := c.ClientConfig("root")
			if err != nil {
				t.Fatal(err)
			}
			cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				if r, ok := req.(*api.CompleteRequest); ok && tc.tamper != nil {
					r.Receipts = tc.tamper(r.Receipts)
				}
				return invoker(ctx, method, req, reply, cc, opts...)
			}))
			cl, err := client.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			p := "/receipts/f" + string(rune('a'+i))
			data := randBytes(800)
			wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
			defer wcancel()
			err = cl.WriteFile(wctx, p, data, client.CreateOptions{Replication: 3, BlockSize: blockSize})
			if !tc.ok {
				if k := errs.KindOf(err); k != errs.Timeout && k != errs.Unavailable {
					t.Fatalf("write: %v (kind %v), want the Complete to give up waiting for a replica", err, k)
				}
				return
			}
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(locs.Blocks) != 1 || len(locs.Blocks[0].Locations) != 3 {
				t.Fatalf("locations right after Complete: %s, want 3 replicas", describe(locs))
			}
			readBack(t, cl, p, data)
		})
	}
}

// TestRevokedDatanodeReceipts: receipts naming a datanode whose identity is
// revoked count for nothing, so with every replica required a Complete
// that only that datanode's receipt could satisfy fails.
func TestRevokedDatanodeReceipts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := startHeldReports(t, ctx, func(nc *namenode.Config) {
		nc.Namespace.CompleteWait = 200 * time.Millisecond
		nc.Namespace.MinReplication = 3
	})
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	opts := client.CreateOptions{Replication: 3, BlockSize: blockSize}
	if err := cl.WriteFile(ctx, "/revoked/before", randBytes(500), opts); err != nil {
		t.Fatalf("write with every receipt good: %v", err)
	}
	if _, err := cl.Revoke(ctx, &api.RevokedEntry{Role: "datanode", Name: c.DatanodeID(0), Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	// Every namenode applies the deny list before the next write.
	for _, nn := range c.Namenodes() {
		if err := cl.WriteFile(ctx, "/revoked/sync-"+nn.ID(), nil, opts); err != nil {
			t.Fatal(err)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	err = cl.WriteFile(wctx, "/revoked/after", randBytes(500), opts)
	if k := errs.KindOf(err); k != errs.Timeout && k != errs.Unavailable {
		t.Fatalf("write after the revocation: %v (kind %v), want the Complete to give up waiting for the third replica", err, k)
	}
}
