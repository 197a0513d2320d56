package hdfsdoor

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	hproto "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// The "Done when": files cross between the HDFS client and
// blockfs's own dfs byte for byte, across several blocks, also when a
// datanode of the write pipeline or the leader namenode dies mid-write.

const faultBlock = 1 << 20

// faultData is a file of several blocks, the last one partial.
func faultData() []byte {
	data := make([]byte, 3*faultBlock+12345)
	for i := range data {
		data[i] = byte(rand.N(256))
	}
	return data
}

// faultHalf is where writeHalf stops: one block and a half in.
const faultHalf = faultBlock + faultBlock/2

// writeHalf creates p with the HDFS client and writes and hflushes the
// first faultHalf bytes of data: the first block is complete and
// acknowledged, the second half written. The writer's deadline is a
// minute, so a hang fails the test rather than stalling the run.
func writeHalf(t *testing.T, cl *hdfs.Client, p string, data []byte) *hdfs.FileWriter {
	t.Helper()
	w, err := cl.CreateFile(p, 3, faultBlock, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w.SetDeadline(time.Now().Add(time.Minute))
	if _, err := w.Write(data[:faultHalf]); err != nil {
		t.Fatal(remote(err))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(remote(err))
	}
	return w
}

// startFaultCluster starts three namenodes with the HDFS door and n
// datanodes with theirs.
func startFaultCluster(t *testing.T, datanodes int) *localcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Dir: t.TempDir(), Datanodes: datanodes, HDFSData: true, Logger: debugLog(),
		Namenode: func(_ int, nc *namenode.Config) { nc.HDFSRPC.Addr = "127.0.0.1:0" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// debugLog is the clusters' log: stderr at debug level with FAULT_LOG
// set in the environment (to see a failing run's nodes), else none.
func debugLog() *slog.Logger {
	if os.Getenv("FAULT_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// buildDFS builds blockfs's dfs command.
func buildDFS(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "dfs")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dfs")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dfs: %v\n%s", err, out)
	}
	return bin
}

// runDFS runs the dfs command against c as root.
func runDFS(t *testing.T, bin string, c *localcluster.Cluster, args ...string) {
	t.Helper()
	full := append([]string{"--namenodes", strings.Join(c.NamenodeAddrs(), ","), "--user", "root", "--timeout", "1m"}, args...)
	if out, err := exec.Command(bin, full...).CombinedOutput(); err != nil {
		t.Fatalf("dfs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func blockfsClient(t *testing.T, c *localcluster.Cluster) *client.Client {
	t.Helper()
	bc, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.Close() })
	return bc
}

// readHDFS reads p whole through the HDFS doors.
func readHDFS(cl *hdfs.Client, p string) ([]byte, error) {
	r, err := cl.Open(p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// TestRoundTripsWithDfs: a file the HDFS client writes (replication 3,
// 1 MiB blocks, four blocks) is read back by blockfs's dfs get byte for
// byte, and one dfs put writes is read back by the HDFS client.
func TestRoundTripsWithDfs(t *testing.T) {
	checkLeaks(t)
	dfs := buildDFS(t)
	c := startFaultCluster(t, 3)
	cl := hdfsClient(t, c, "root")
	dir := t.TempDir()
	tests := []struct {
		name  string
		write func(t *testing.T, p string, data []byte)
		read  func(t *testing.T, p string) []byte
	}{
		{"hdfs client writes, dfs get reads",
			func(t *testing.T, p string, data []byte) {
				w, err := cl.CreateFile(p, 3, faultBlock, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(data); err != nil {
					t.Fatal(remote(err))
				}
				if err := w.Close(); err != nil {
					t.Fatal(remote(err))
				}
			},
			func(t *testing.T, p string) []byte {
				local := filepath.Join(dir, filepath.Base(p)+".out")
				runDFS(t, dfs, c, "get", p, local)
				got, err := os.ReadFile(local)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}},
		{"dfs put writes, hdfs client reads",
			func(t *testing.T, p string, data []byte) {
				local := filepath.Join(dir, filepath.Base(p)+".in")
				if err := os.WriteFile(local, data, 0o644); err != nil {
					t.Fatal(err)
				}
				runDFS(t, dfs, c, "put", "-replication", "3", "-blocksize", "1048576", local, p)
			},
			func(t *testing.T, p string) []byte {
				got, err := readHDFS(cl, p)
				if err != nil {
					t.Fatal(remote(err))
				}
				return got
			}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := "/roundtrip-" + string(rune('a'+i))
			data := faultData()
			tc.write(t, p, data)
			fi, err := cl.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Sys().(*hdfs.FileStatus); got.GetBlockReplication() != 3 || got.GetBlocksize() != faultBlock {
				t.Fatalf("written with replication %d, block size %d: want 3, %d", got.GetBlockReplication(), got.GetBlocksize(), faultBlock)
			}
			if got := tc.read(t, p); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, want the %d written", len(got), len(data))
			}
		})
	}
}

// pipelineSpy is an HDFS client's DatanodeDialFunc that records every
// WRITE_BLOCK the client sends: the datanode it talks to and the targets
// it asks that one to forward to, in pipeline order.
type pipelineSpy struct {
	mu     sync.Mutex
	writes []spiedWrite
}

type spiedWrite struct {
	first   string   // the door's address the client dialed
	targets []string // datanode ids, in pipeline order
	block   uint64
}

func (s *pipelineSpy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &spyConn{Conn: conn, spy: s, addr: addr}, nil
}

// last is the latest WRITE_BLOCK.
func (s *pipelineSpy) last(t *testing.T) spiedWrite {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.writes) == 0 {
		t.Fatal("the client sent no WRITE_BLOCK")
	}
	return s.writes[len(s.writes)-1]
}

type spyConn struct {
	net.Conn
	spy  *pipelineSpy
	addr string
	buf  []byte
	done bool
}

// Write parses the op at the start of the connection: version (2 bytes),
// op (1 byte), a varint-delimited OpWriteBlockProto.
func (c *spyConn) Write(b []byte) (int, error) {
	if !c.done {
		c.buf = append(c.buf, b...)
		c.done = c.parse()
	}
	return c.Conn.Write(b)
}

func (c *spyConn) parse() bool {
	if len(c.buf) < 3 {
		return false
	}
	if c.buf[2] != 0x50 {
		return true // not WRITE_BLOCK
	}
	n, l := protowire.ConsumeVarint(c.buf[3:])
	if l < 0 || uint64(len(c.buf)-3-l) < n {
		return false
	}
	var op hproto.OpWriteBlockProto
	if proto.Unmarshal(c.buf[3+l:3+l+int(n)], &op) != nil {
		return true
	}
	w := spiedWrite{first: c.addr, block: op.GetHeader().GetBaseHeader().GetBlock().GetBlockId()}
	for _, tg := range op.GetTargets() {
		w.targets = append(w.targets, tg.GetId().GetDatanodeUuid())
	}
	c.spy.mu.Lock()
	c.spy.writes = append(c.spy.writes, w)
	c.spy.mu.Unlock()
	return true
}

// datanodeIndex is the localcluster index of the datanode with id, or of
// the one whose HDFS data door is at addr.
func datanodeIndex(t *testing.T, c *localcluster.Cluster, id, addr string) int {
	t.Helper()
	for i := range len(c.DatanodeAddrs()) {
		d := c.Datanode(i)
		if d != nil && ((id != "" && d.ID() == id) || (addr != "" && d.HDFSDataAddr() == addr)) {
			return i
		}
	}
	t.Fatalf("no running datanode %q / %q", id, addr)
	return -1
}

// TestDatanodeKilledMidBlock: the HDFS client writes a file of several
// blocks and a datanode of the second block's pipeline dies in the middle
// of it. The HDFS client (colinmarc/hdfs) cannot rebuild a pipeline: it
// only ever talks to the first datanode. A downstream one dying is the
// first datanode's to carry: the write completes on the survivors, reads
// back byte for byte through both doors, and the namenode brings every
// block back to three replicas. The first datanode dying fails the write
// with an error; after lease recovery the file holds a prefix of what was
// written, at least the blocks acknowledged before, and nothing else.
func TestDatanodeKilledMidBlock(t *testing.T) {
	tests := []struct {
		name   string
		victim int // pipeline position: 0 is the datanode the client talks to
	}{
		{"the second datanode", 1},
		{"the last datanode", 2},
		{"the first datanode", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			leaks := checkFaultLeaks(t)
			c := startFaultCluster(t, 4)
			spy := &pipelineSpy{}
			cl, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: c.HDFSRPCAddrs(), User: "root", DatanodeDialFunc: spy.dial})
			if err != nil {
				t.Fatal(err)
			}
			clOpen := true
			defer func() {
				if clOpen {
					cl.Close()
				}
			}()
			bc := blockfsClient(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			data := faultData()
			const p = "/killed-datanode"
			w := writeHalf(t, cl, p, data)
			pl := spy.last(t)
			if len(pl.targets) != 2 {
				t.Fatalf("pipeline of %d datanodes, want 3", 1+len(pl.targets))
			}
			var victim int
			if tc.victim == 0 {
				victim = datanodeIndex(t, c, "", pl.first)
			} else {
				victim = datanodeIndex(t, c, pl.targets[tc.victim-1], "")
			}
			victimID := c.DatanodeID(victim)
			if err := c.StopDatanode(victim); err != nil {
				t.Fatal(err)
			}
			// The rest of the block, all but its last byte: the client
			// asks for no new block yet.
			_, werr := w.Write(data[faultHalf : 2*faultBlock-1])
			if werr == nil && tc.victim > 0 {
				// The namenode hands the dead datanode out for new blocks
				// until it notices (in HDFS, until it is stale): an HDFS
				// client excludes it and asks again, this one cannot. So
				// the file goes on once the namenodes know.
				waitDead(t, ctx, c, victimID)
				_, werr = w.Write(data[2*faultBlock-1:])
			}
			if werr == nil {
				werr = w.Close()
			}

			if tc.victim > 0 {
				if werr != nil {
					t.Fatalf("write with datanode %s of the pipeline %s→%v killed: %v", victimID, pl.first, pl.targets, remote(werr))
				}
				checkFile(t, ctx, cl, bc, p, data)
				waitReplicated(t, ctx, bc, p, 3, victimID)
				checkFile(t, ctx, cl, bc, p, data)
				return
			}
			if werr == nil {
				t.Fatal("the write went on after the datanode the client writes to died")
			}
			// The client leaves its block stream's goroutines behind after
			// a failed write (colinmarc/hdfs: it never closes them then).
			leaks.ignore("github.com/colinmarc/hdfs/v2/internal/transfer.(*blockWriteStream).ackPackets",
				"github.com/colinmarc/hdfs/v2/internal/transfer.(*blockWriteStream).writeHeartbeats")
			t.Logf("the HDFS client's write failed as it must: %v", remote(werr))
			cl.Close() // it renews its lease as long as it lives
			clOpen = false
			// A recovery whose primary is the datanode just killed would
			// wait out the recovery timeout: recover once it is known dead,
			// as the lease monitor of a long-lived cluster would.
			waitDead(t, ctx, c, victimID)
			closed, err := bc.RecoverLease(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if !closed {
				if err := bc.WaitClosed(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			got, err := bc.ReadFile(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < faultBlock || len(got) > len(data) || !bytes.Equal(got, data[:len(got)]) {
				t.Fatalf("after recovery the file holds %d bytes (prefix of what was written: %v), want at least the acknowledged %d",
					len(got), len(got) <= len(data) && bytes.Equal(got, data[:len(got)]), faultBlock)
			}
			t.Logf("after recovery the file holds %d of the %d bytes written", len(got), faultHalf)
			cl2 := hdfsClient(t, c, "root")
			if back, err := readHDFS(cl2, p); err != nil || !bytes.Equal(back, got) {
				t.Fatalf("read back through the HDFS doors: %d bytes, %v", len(back), remote(err))
			}
		})
	}
}

// checkFile reads p through the HDFS doors and through blockfs's client
// and wants data from both.
func checkFile(t *testing.T, ctx context.Context, cl *hdfs.Client, bc *client.Client, p string, data []byte) {
	t.Helper()
	if got, err := readHDFS(cl, p); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back through the HDFS doors: %d bytes of %d, %v", len(got), len(data), remote(err))
	}
	if got, err := bc.ReadFile(ctx, p); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back through blockfs's client: %d bytes of %d, %v", len(got), len(data), err)
	}
}

// waitReplicated waits until every block of p has want live replicas, none
// of them on datanode gone.
func waitReplicated(t *testing.T, ctx context.Context, bc *client.Client, p string, want int, gone string) {
	t.Helper()
	for {
		locs, err := bc.GetBlockLocations(ctx, p, 0, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		ok := len(locs.Blocks) > 0
		for _, b := range locs.Blocks {
			n := 0
			for _, l := range b.Locations {
				if l.Id != gone {
					n++
				}
			}
			ok = ok && n >= want
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("blocks of %s not back to %d replicas: %v", p, want, locs.Blocks)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitDead waits until every running namenode sees datanode id dead.
func waitDead(t *testing.T, ctx context.Context, c *localcluster.Cluster, id string) {
	t.Helper()
	for {
		dead := true
		for _, nn := range c.Namenodes() {
			if info, ok := nn.Blocks().Datanode(id); ok && info.State == blocks.Live {
				dead = false
			}
		}
		if dead {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("datanode %s still live", id)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// faultLeaks is checkLeaks with functions a test may add to ignore.
type faultLeaks struct{ opts []goleak.Option }

func checkFaultLeaks(t *testing.T) *faultLeaks {
	l := &faultLeaks{opts: []goleak.Option{goleak.IgnoreCurrent(), goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*NetworkTransport).handleConn")}}
	t.Cleanup(func() { goleak.VerifyNone(t, l.opts...) })
	return l
}

func (l *faultLeaks) ignore(fns ...string) {
	for _, f := range fns {
		l.opts = append(l.opts, goleak.IgnoreAnyFunction(f))
	}
}

// TestLeaderKilledMidWrite: the HDFS client, given all three namenodes'
// doors, writes a file of several blocks; the leader namenode dies in the
// middle of a block. The client's next call fails over (the dead one's
// connection is reset; a follower holds a write until a leader is elected
// and answers StandbyException, or serves it as the new leader), the file
// completes, and it reads back byte for byte through the HDFS doors and
// through blockfs's client.
//
// colinmarc/hdfs sets a namenode aside for 5 s after a StandbyException
// and gives up when all are set aside: a client that failed over to the
// leader (listed last) at its first write cannot fail over again within
// those 5 s. That case kills the leader once they are over.
func TestLeaderKilledMidWrite(t *testing.T) {
	const clientBackoff = 5 * time.Second // colinmarc/hdfs internal/rpc backoffDuration
	tests := []struct {
		name     string
		leaderAt int // the leader's place in the client's namenode list
	}{
		{"the leader listed first", 0},
		{"the leader listed last, after the client failed over to it", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			c := startFaultCluster(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			leader, err := c.WaitLeader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var addrs []string
			for i := range 3 {
				addrs = append(addrs, c.HDFSRPCAddrs()[(leader-tc.leaderAt+i+3)%3])
			}
			cl, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: addrs, User: "root"})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			data := faultData()
			const p = "/killed-leader"
			created := time.Now()
			w := writeHalf(t, cl, p, data)
			if tc.leaderAt > 0 {
				time.Sleep(time.Until(created.Add(clientBackoff + 500*time.Millisecond)))
			}
			if l, err := c.WaitLeader(ctx); err != nil {
				t.Fatal(err)
			} else if l != leader {
				t.Logf("the leader moved from nn%d to nn%d on its own (a loaded machine)", leader+1, l+1)
				leader = l
			}
			if err := c.StopNamenode(leader); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(data[faultHalf:]); err != nil {
				t.Fatalf("write after the leader nn%d died: %v", leader+1, remote(err))
			}
			if err := w.Close(); err != nil {
				t.Fatalf("close after the leader nn%d died: %v", leader+1, remote(err))
			}
			checkFile(t, ctx, cl, blockfsClient(t, c), p, data)
		})
	}
}
