package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/namespace"
)

// The structures phase builds the namenode's two in-memory structures at
// full size with the calls the FSM makes when it applies a create (Session
// Mkdirs/Create/AddBlock/Complete, and the block map's SetExpected as the
// FSM's blockEvents adapter calls it), then feeds the block map the full
// reports of the datanodes, as the DatanodeProtocol handler does. Nothing
// here goes through Raft or gRPC: Raft does not change what the structures
// hold, and at a million files its log would dominate the run.

const (
	superuser  = "root"
	supergroup = "supergroup"
	datanodes  = 10
	replicas   = 3
	blockLen   = 1024
)

// heapObjects returns the bytes of heap objects after a full collection,
// i.e. the live heap.
func heapObjects() uint64 {
	runtime.GC()
	runtime.GC()
	return readHeap()
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// readHeap reads the heap objects metric now (live and not yet swept
// garbage) without collecting.
func readHeap() uint64 {
	s := []metrics.Sample{{Name: heapSample[0].Name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// filePath names file i: perDir files to a directory, directories
// grouped 100 to a parent, so paths look like a real tree
// (/data/g0003/d0312/f000042).
func filePath(i, perDir int) (dir, file string) {
	d := i / perDir
	dir = fmt.Sprintf("/data/g%04d/d%06d", d/100, d)
	return dir, fmt.Sprintf("%s/f%06d", dir, i%perDir)
}

// structs is the outcome of the structures phase.
type structs struct {
	tree   *namespace.Tree
	mgr    *blocks.Manager
	caller *namespace.Caller
	files  int

	nsBytes, bmBytes uint64
	blocks           int
	buildNs          time.Duration
}

// applyCreate does what the FSM does for one file written by a client:
// Create, AddBlock (the block map is told the block exists), Complete with
// the block's final length (told again, complete). Each is one Raft
// command, applied under the FSM's write lock, which parses the command's
// path as it applies it.
func applyCreate(mu *sync.RWMutex, s namespace.Session, mgr *blocks.Manager, path string, mtime int64) (namespace.Block, namespace.ID, error) {
	mu.Lock()
	p, err := namespace.ParsePath(path)
	if err != nil {
		mu.Unlock()
		return namespace.Block{}, 0, err
	}
	fi, _, err := s.Create(p, namespace.CreateOpts{Perm: 0o644, Replication: replicas, BlockSize: 128 << 20, MtimeMs: mtime})
	mu.Unlock()
	if err != nil {
		return namespace.Block{}, 0, err
	}
	mu.Lock()
	p, _ = namespace.ParsePath(path) // valid: Create took it
	nb, err := s.AddBlock(p, fi.ID, nil, mtime)
	if err == nil && mgr != nil {
		mgr.SetExpected(nb.Block.ID, nb.Block.GenStamp, uint64(fi.ID), replicas, false)
	}
	mu.Unlock()
	if err != nil {
		return namespace.Block{}, 0, err
	}
	b := nb.Block
	b.Length = blockLen
	mu.Lock()
	p, _ = namespace.ParsePath(path)
	_, err = s.Complete(p, fi.ID, []namespace.Block{b}, mtime)
	if err == nil && mgr != nil {
		mgr.SetExpected(b.ID, b.GenStamp, uint64(fi.ID), replicas, true)
	}
	mu.Unlock()
	return b, fi.ID, err
}

// buildStructs builds the namespace, measures it, then the block map with
// every datanode's full report, and measures that.
func buildStructs(files, perDir int) (*structs, error) {
	var mu sync.RWMutex
	base := heapObjects()
	start := time.Now()
	tree := namespace.New(namespace.DefaultLimits(), superuser, supergroup)
	caller := namespace.Policy{Superuser: superuser, Supergroup: supergroup}.Caller(superuser, nil, "nnscale")
	s := tree.As(caller, "nnscale")
	mtime := time.Now().UnixMilli()
	type rec struct {
		b     namespace.Block
		inode namespace.ID
	}
	// The records of what was allocated are kept outside the measured
	// span: they stand for what the datanodes hold, not the namenode.
	recs := make([]rec, files)
	for i := range files {
		dir, p := filePath(i, perDir)
		if i%perDir == 0 {
			mu.Lock()
			err := s.Mkdirs(mustParse(dir), namespace.MkdirsOpts{Perm: 0o755, Parents: true, MtimeMs: mtime})
			mu.Unlock()
			if err != nil {
				return nil, err
			}
		}
		// Expectations go to the block map later, so the namespace is
		// measured alone; the calls are the same.
		b, id, err := applyCreate(&mu, s, nil, p, mtime)
		if err != nil {
			return nil, err
		}
		recs[i] = rec{b, id}
	}
	buildNs := time.Since(start)
	afterNs := heapObjects()
	// recs is live in both readings after this point; it was allocated
	// before the namespace, so subtract its size exactly.
	recSize := uint64(cap(recs)) * uint64(unsafe.Sizeof(recs[0]))
	nsBytes := afterNs - base - recSize

	mgr, err := blocks.New(blocks.DefaultConfig())
	if err != nil {
		return nil, err
	}
	for d := range datanodes {
		if err := mgr.Register(blocks.Datanode{ID: dnID(d), Addr: fmt.Sprintf("127.0.0.1:%d", 9000+d), Capacity: 1 << 50}); err != nil {
			return nil, err
		}
	}
	for _, r := range recs {
		mgr.SetExpected(r.b.ID, r.b.GenStamp, uint64(r.inode), replicas, false)
		mgr.SetExpected(r.b.ID, r.b.GenStamp, uint64(r.inode), replicas, true)
	}
	for d := range datanodes {
		rs := reportFor(d, len(recs), func(i int) blocks.Replica {
			return blocks.Replica{BlockID: recs[i].b.ID, GenStamp: recs[i].b.GenStamp, Length: blockLen, Inode: uint64(recs[i].inode)}
		})
		if !mgr.FullReport(dnID(d), rs) {
			return nil, fmt.Errorf("full report from %s refused", dnID(d))
		}
	}
	afterBm := heapObjects()
	runtime.KeepAlive(recs)
	return &structs{
		tree: tree, mgr: mgr, caller: caller, files: files,
		nsBytes: nsBytes, bmBytes: afterBm - afterNs, blocks: files, buildNs: buildNs,
	}, nil
}

func dnID(d int) string { return fmt.Sprintf("dn%02d", d) }

// reportFor lists the replicas datanode d holds: block i lives on
// datanodes i, i+1 and i+2 (mod 10), so every datanode holds 3/10 of the
// blocks.
func reportFor(d, n int, replica func(i int) blocks.Replica) []blocks.Replica {
	rs := make([]blocks.Replica, 0, n*replicas/datanodes+1)
	for i := range n {
		if k := (d - i%datanodes + datanodes) % datanodes; k < replicas {
			rs = append(rs, replica(i))
		}
	}
	return rs
}

// snapshotRun is one snapshot under load.
type snapshotRun struct {
	ms       float64 // encode time, from opening the view to the last byte written
	peakOver uint64  // peak heap objects during the encode minus the live heap before it
	// creates are the writer's creates (Create command, write lock):
	// those that overlapped the encode, and outside it the control, the
	// machine's own noise.
	creates    createStats
	imageBytes int
}

// snapshot encodes the namespace image as fsm.Snapshot and Persist do:
// the view is opened under the write lock, then encoded holding no lock of
// the namespace's, and streamed to a file (the snapshot store's sink)
// in dir, while a writer keeps applying creates under the write lock, as
// Raft's apply goroutine would. It returns the writer's latencies outside
// the encode too. The image is left in dir/image.
func snapshot(st *structs, mu *sync.RWMutex, seq *atomic.Int64, calm time.Duration, dir string) (snapshotRun, []float64, error) {
	s := st.tree.As(st.caller, "nnscale")
	mtime := time.Now().UnixMilli()
	var (
		stop atomic.Bool
		peak atomic.Uint64
		wg   sync.WaitGroup
		w    window
		tr   trickle
	)
	kick := make(chan struct{}, 1)
	out, err := os.Create(filepath.Join(dir, "image"))
	if err != nil {
		return snapshotRun{}, nil, err
	}
	defer out.Close()
	live := heapObjects()
	wg.Add(2)
	go func() { // the writer
		defer wg.Done()
		tr.run(func() error {
			i := seq.Add(1)
			p := fmt.Sprintf("/load/d%04d/f%06d", i/1000, i%1000)
			mu.Lock()
			defer mu.Unlock()
			pp, err := namespace.ParsePath(p)
			if err != nil {
				return err
			}
			_, _, err = s.Create(pp, namespace.CreateOpts{Perm: 0o644, Replication: replicas, BlockSize: 128 << 20, CreateParent: true, MtimeMs: mtime})
			return err
		}, nil, &w, &stop, kick)
	}()
	go func() { // the heap sampler
		defer wg.Done()
		for !stop.Load() {
			if w.start.Load() != 0 && w.end.Load() == 0 {
				if h := readHeap(); h > peak.Load() {
					peak.Store(h)
				}
			}
			time.Sleep(500 * time.Microsecond)
		}
	}()
	time.Sleep(calm)
	bw := bufio.NewWriterSize(out, 64<<10) // as raft's file sink buffers
	t0 := time.Now()
	w.start.Store(t0.UnixNano())
	mu.Lock()
	v := st.tree.View()
	mu.Unlock()
	select {
	case kick <- struct{}{}:
	default:
	}
	err = v.Encode(bw) // no lock: the view orders itself against the writer
	if err == nil {
		err = bw.Flush()
	}
	t1 := time.Now()
	w.end.Store(t1.UnixNano())
	mu.Lock()
	v.Close()
	mu.Unlock()
	time.Sleep(calm)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		return snapshotRun{}, nil, err
	}
	if tr.err != nil {
		return snapshotRun{}, nil, tr.err
	}
	fi, err := out.Stat()
	if err != nil {
		return snapshotRun{}, nil, err
	}
	r := snapshotRun{ms: float64(t1.Sub(t0).Nanoseconds()) / 1e6, imageBytes: int(fi.Size()), creates: tr.stats()}
	if p := peak.Load(); p > live {
		r.peakOver = p - live
	}
	return r, tr.outside, nil
}

// restore decodes the image in file as fsm.Restore does (a 64 KiB
// buffered reader over the stream) and returns the time taken and the
// file count.
func restore(file string) (float64, int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	t0 := time.Now()
	t, err := namespace.ReadImage(bufio.NewReaderSize(f, 1<<16))
	d := time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	files, _, _ := t.Counts()
	return float64(d.Nanoseconds()) / 1e6, files, nil
}

// mustParse parses p, a path this program made.
func mustParse(p string) namespace.Path {
	pp, err := namespace.ParsePath(p)
	if err != nil {
		panic(err)
	}
	return pp
}
