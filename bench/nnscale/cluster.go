package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/bench/internal/results"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// The cluster phase runs a real namenode (a 1-namenode localcluster:
// Raft, FSM, block map, token issuer) and calls its ClientService handler
// in-process. Its files are written through that handler, so every one went
// through Raft and the FSM; the datanodes are scripted over gRPC
// (register, heartbeat, one full block report each), so the replicas the
// reads list are real block-map entries.

// clusterResult is the outcome of the cluster phase.
type clusterResult struct {
	files          int
	buildS         float64
	restartReadyMs float64
	largestReport  int
	nsPerBlock1000 []float64 // one per run
	cachedUs       []float64 // one per run: mean of the run's calls
	perRequestUs   []float64
	// The control of twinReads: GetFileInfo on the same two nodes.
	statCachedUs     []float64
	statPerRequestUs []float64
	cachedNode       []string // one per run: "A" or "B", the node in cached mode
	// raftSnapshots: the admin Snapshot call's time per run, the creates
	// around each, and every create that overlapped none.
	raftSnapshotMs []float64
	rpcCreates     []createStats
	rpcOutside     []float64
}

type clusterFile struct {
	path  string
	inode uint64
	block *api.Block
}

// nn is a running namenode with its scripted datanodes.
type nn struct {
	c    *localcluster.Cluster
	conn *grpc.ClientConn
	srv  api.ClientServiceServer
	stop chan struct{}
	done chan struct{} // the heartbeat loop's end; nil until datanodesUp

	largestReport int // bytes of the largest BlockReportRequest sent
}

func incoming(user string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, user))
}

func asDatanode(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, security.UserKey, id, security.RoleKey, security.RoleDatanode.String())
}

// startNN starts a 1-namenode cluster in dir (restarting it if dir holds
// one) with the given token mode; raftAddr pins the Raft address a
// restarted node had.
func startNN(ctx context.Context, dir string, mode security.Mode, raftAddr string) (*nn, error) {
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Dir: dir, Namenode: func(i int, nc *namenode.Config) {
		nc.Namespace.MinReplication = 0 // the datanodes are scripted; Complete does not wait for them
		nc.Tokens.Mode = mode
		nc.Namespace.MaxBlockSize = namenode.DefaultConfig().Namespace.MaxBlockSize // its files' 128 MiB blocks
		// A datanode sends its whole report in one request; at 1M blocks
		// (300k per datanode) that is past the default 4 MiB cap, which
		// is reported, not hidden: see largest_block_report_bytes.
		nc.MaxRequestSize = 256 << 20
		// localcluster declares a datanode dead after 1 s of silence, for
		// its fault tests; these scripted ones heartbeat every second
		// from a busy process, so take the production timings back.
		d := blocks.DefaultConfig()
		nc.Blocks.HeartbeatInterval, nc.Blocks.DeadAfterMissed, nc.Blocks.StaleAfter = d.HeartbeatInterval, d.DeadAfterMissed, d.StaleAfter
		nc.Blocks.ReplicationTimeout, nc.Blocks.UnknownReplicaGrace = d.ReplicationTimeout, d.UnknownReplicaGrace
		if raftAddr != "" {
			nc.Raft.Addr = raftAddr
		}
	}})
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(c.NamenodeAddrs()[0], grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		c.Close()
		return nil, err
	}
	x := &nn{c: c, conn: conn, srv: c.Namenode(0).ClientServer(), stop: make(chan struct{})}
	return x, nil
}

// datanodesUp registers the scripted datanodes and keeps them alive.
func (x *nn) datanodesUp(ctx context.Context) error {
	dp := api.NewDatanodeProtocolClient(x.conn)
	for d := range datanodes {
		_, err := dp.Register(asDatanode(ctx, dnID(d)), &api.RegisterRequest{Node: &api.DatanodeInfo{
			Id: dnID(d), Addr: fmt.Sprintf("127.0.0.1:%d", 9000+d), Capacity: 1 << 50,
		}})
		if err != nil {
			return fmt.Errorf("register %s: %w", dnID(d), err)
		}
	}
	x.done = make(chan struct{})
	go func() {
		defer close(x.done)
		for {
			select {
			case <-x.stop:
				return
			case <-time.After(time.Second):
			}
			for d := range datanodes {
				cctx, cancel := context.WithTimeout(asDatanode(context.Background(), dnID(d)), 5*time.Second)
				_, _ = dp.Heartbeat(cctx, &api.HeartbeatRequest{DatanodeId: dnID(d), Capacity: 1 << 50})
				cancel()
			}
		}
	}()
	return nil
}

// report sends every datanode's full block report: file i's block on
// datanodes i..i+2 (mod 10), block j of the big file likewise.
func (x *nn) report(ctx context.Context, files []clusterFile, big []*api.Block, bigInode uint64) error {
	dp := api.NewDatanodeProtocolClient(x.conn)
	for d := range datanodes {
		req := &api.BlockReportRequest{DatanodeId: dnID(d)}
		for i, f := range files {
			if (d-i%datanodes+datanodes)%datanodes < replicas {
				req.Blocks = append(req.Blocks, &api.ReportedBlock{Block: f.block, InodeId: f.inode})
			}
		}
		for j, b := range big {
			if (d-j%datanodes+datanodes)%datanodes < replicas {
				req.Blocks = append(req.Blocks, &api.ReportedBlock{Block: b, InodeId: bigInode})
			}
		}
		x.largestReport = max(x.largestReport, proto.Size(req))
		if _, err := dp.BlockReport(asDatanode(ctx, dnID(d)), req); err != nil {
			return fmt.Errorf("block report %s: %w", dnID(d), err)
		}
	}
	return nil
}

// close stops the heartbeat loop, then the node; its state stays in its
// directory for the next start.
func (x *nn) close() {
	select {
	case <-x.stop:
	default:
		close(x.stop)
		if x.done != nil {
			select {
			case <-x.done:
			case <-time.After(10 * time.Second):
			}
		}
	}
	x.conn.Close()
	x.c.Close()
}

// writeFile writes a file of n blocks through the handler: Create,
// AddBlock per block (each with its predecessor's final length), Complete.
func writeFile(srv api.ClientServiceServer, ctx context.Context, path string, n int) (uint64, []*api.Block, error) {
	cr, err := srv.Create(ctx, &api.CreateRequest{Path: path, Mode: 0o644, Replication: replicas, BlockSize: 128 << 20})
	if err != nil {
		return 0, nil, err
	}
	id := cr.Status.InodeId
	var bs []*api.Block
	var prev *api.Block
	for range n {
		r, err := srv.AddBlock(ctx, &api.AddBlockRequest{Path: path, InodeId: id, Previous: prev})
		if err != nil {
			return 0, nil, err
		}
		prev = r.Block.Block
		prev.Length = blockLen
		bs = append(bs, prev)
	}
	if _, err := srv.Complete(ctx, &api.CompleteRequest{Path: path, InodeId: id, Blocks: bs}); err != nil {
		return 0, nil, err
	}
	return id, bs, nil
}

var stale = &api.ReadOptions{Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE}

// runCluster builds n files (and one 1000-block file) in a real namenode,
// snapshots it, restarts it in per-request token mode (node A) and
// measures the restart, starts a copy of the same state in cached mode
// (node B), and measures GetBlockLocations on both (twinReads).
func runCluster(ctx context.Context, n, perDir, runs, calls int, logf func(string, ...any)) (*clusterResult, error) {
	dir, err := os.MkdirTemp("", "nnscale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	x, err := startNN(ctx, dir, security.Cached, "")
	if err != nil {
		return nil, err
	}
	defer func() {
		if x != nil {
			x.close()
		}
	}()
	if err := x.datanodesUp(ctx); err != nil {
		return nil, err
	}
	root := incoming(superuser)
	res := &clusterResult{files: n}

	t0 := time.Now()
	files := make([]clusterFile, n)
	for i := 0; i < n; i += perDir {
		dirPath, _ := filePath(i, perDir)
		if _, err := x.srv.Mkdirs(root, &api.MkdirsRequest{Path: dirPath, Parents: true, Mode: 0o755}); err != nil {
			return nil, fmt.Errorf("mkdirs %s: %w", dirPath, err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				_, p := filePath(i, perDir)
				id, bs, err := writeFile(x.srv, root, p, 1)
				if err != nil {
					errc <- fmt.Errorf("write %s: %w", p, err)
					return
				}
				files[i] = clusterFile{path: p, inode: id, block: bs[0]}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	bigInode, big, err := writeFile(x.srv, root, "/data/big1000", 1000)
	if err != nil {
		return nil, err
	}
	res.buildS = time.Since(t0).Seconds()
	logf("cluster: %d files + one 1000-block file written through Raft in %.1fs", n, res.buildS)
	if err := x.report(ctx, files, big, bigInode); err != nil {
		return nil, err
	}
	if err := checkReplicas(x.srv, files, calls); err != nil {
		return nil, err
	}
	res.largestReport = x.largestReport
	res.raftSnapshotMs, res.rpcCreates, res.rpcOutside, err = raftSnapshots(ctx, x, runs, 300*time.Millisecond)
	if err != nil {
		return nil, err
	}
	logf("cluster: %d Raft snapshots under a trickle of creates, %.0f ms each (median)", runs, results.Median(res.raftSnapshotMs))

	// Restart from a snapshot: take one now so the restarted node loads
	// the image rather than replaying the log.
	adm := api.NewAdminClient(x.conn)
	octx := metadata.AppendToOutgoingContext(ctx, security.UserKey, superuser)
	if _, err := adm.Snapshot(octx, &api.SnapshotRequest{}); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	a := &twin{name: "A", dir: dir, raftAddr: x.c.Namenode(0).RaftAddr()}
	x.close()
	x = nil
	// The second node restarts from a copy of the same state (see
	// twinReads); copy it before the first one opens it. Node A keeps
	// the Raft address the original had; B gets a fresh port: a
	// 1-namenode cluster elects itself by its ID, whatever the address.
	b := &twin{name: "B", dir: dir + "-twin"}
	if err := os.CopyFS(b.dir, os.DirFS(dir)); err != nil {
		return nil, fmt.Errorf("copy the namenode's state: %w", err)
	}
	defer os.RemoveAll(b.dir)
	defer a.close()
	defer b.close()
	up := upArgs{files: files, big: big, bigInode: bigInode, calls: calls}
	readyMs, err := a.start(ctx, security.PerRequest, up)
	if err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	res.restartReadyMs = readyMs
	logf("cluster: restarted from a snapshot of %d files, answering reads after %.0f ms", n, res.restartReadyMs)
	if _, err := b.start(ctx, security.Cached, up); err != nil {
		return nil, fmt.Errorf("start the twin: %w", err)
	}
	if err := twinReads(ctx, res, [2]*twin{a, b}, up, runs, calls, logf); err != nil {
		return nil, err
	}
	return res, nil
}

// raftSnapshots measures what a client's Create meets while the namenode
// takes a Raft snapshot of everything it holds (the admin Snapshot call:
// fsm.Snapshot on the FSM goroutine, Persist streaming to the file
// snapshot store, the store's fsync, then log compaction): a trickle of
// Create calls through the handler, so through Raft's log and the FSM, each
// followed by an untimed Complete as a writer closes its file. One
// snapshot per run, with calm before and after for the control.
func raftSnapshots(ctx context.Context, x *nn, runs int, calm time.Duration) (snaps []float64, creates []createStats, outside []float64, err error) {
	adm := api.NewAdminClient(x.conn)
	octx := metadata.AppendToOutgoingContext(ctx, security.UserKey, superuser)
	root := incoming(superuser)
	seq := 0
	for range runs {
		var (
			stop atomic.Bool
			w    window
			tr   trickle
			wg   sync.WaitGroup
			path string
			id   uint64
		)
		wg.Go(func() {
			tr.run(func() error {
				seq++
				path = fmt.Sprintf("/load/d%04d/f%06d", seq/1000, seq%1000)
				r, err := x.srv.Create(root, &api.CreateRequest{Path: path, Mode: 0o644, Replication: replicas, BlockSize: 128 << 20, CreateParent: true})
				if err == nil {
					id = r.Status.InodeId
				}
				return err
			}, func() error {
				_, err := x.srv.Complete(root, &api.CompleteRequest{Path: path, InodeId: id})
				return err
			}, &w, &stop, nil)
		})
		time.Sleep(calm)
		t0 := time.Now()
		w.start.Store(t0.UnixNano())
		_, serr := adm.Snapshot(octx, &api.SnapshotRequest{})
		t1 := time.Now()
		w.end.Store(t1.UnixNano())
		time.Sleep(calm)
		stop.Store(true)
		wg.Wait()
		if serr != nil {
			return nil, nil, nil, fmt.Errorf("snapshot: %w", serr)
		}
		if tr.err != nil {
			return nil, nil, nil, fmt.Errorf("create: %w", tr.err)
		}
		snaps = append(snaps, float64(t1.Sub(t0).Nanoseconds())/1e6)
		creates = append(creates, tr.stats())
		outside = append(outside, tr.outside...)
	}
	return snaps, creates, outside, nil
}
