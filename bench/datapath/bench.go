package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/blockfs/blockfs/bench/internal/results"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// Config is one benchmark invocation.
type Config struct {
	Size       int64  // bytes each put/get case moves, and each floor
	Runs       int    // rows are medians over runs
	Clients    int    // clients of the concurrent put/get rows
	Encrypt    []bool // encryption-at-rest settings, one cluster each
	MTLS       bool   // cluster (and stream floor) under mTLS
	IOSize     int    // bytes per Write/Read call and per floor write
	BlockSize  int64  // block size of every put/get/read4k file
	Reads      int    // 4 KiB reads per offset and run
	Writers    int    // concurrent-writes writers
	WriteBlock int64  // concurrent-writes: each writer's one block
	Dir        string // parent of the cluster data; "" is a temp dir
	JSON       string
	// InflightCap is the datanode's in-flight write cap in bytes for the
	// heap bound; -1 looks for it in datanode.DefaultConfig.
	InflightCap int64
	// BytesPerChecksum is the namenodes' --bytes-per-checksum, the chunk
	// every writer checksums (0: the namenode's default).
	BytesPerChecksum uint32
}

// DefaultConfig is the configuration.
func DefaultConfig() Config {
	return Config{Size: 1 << 30, Runs: 3, Clients: 4, Encrypt: []bool{false, true}, MTLS: true, IOSize: 4 << 20,
		BlockSize: 64 << 20, Reads: 200, Writers: 8, WriteBlock: 128 << 20, InflightCap: -1}
}

// QuickConfig is a smoke run of a few seconds per encryption setting.
func QuickConfig() Config {
	c := DefaultConfig()
	c.Size, c.Runs, c.BlockSize, c.Reads, c.WriteBlock = 16<<20, 1, 4<<20, 20, 4<<20
	return c
}

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	switch {
	case c.Runs < 1 || c.Clients < 1 || c.Reads < 1 || c.Writers < 1:
		return errors.New("--runs, --clients, --reads and --writers must be at least 1")
	case len(c.Encrypt) == 0:
		return errors.New("no encryption setting to measure")
	case c.IOSize < 1 || c.BlockSize < 2*readSize || c.WriteBlock < 1:
		return fmt.Errorf("--io-size must be positive, --block-size at least %d bytes", 2*readSize)
	case c.Size < int64(c.Clients):
		return errors.New("--size must give every client at least one byte")
	}
	return nil
}

// Row is one line of the table and of the JSON: the median over runs of
// one case of one encryption setting. Fields a case does not measure are
// zero. Floors are the medians of the floors measured in the same runs.
type Row struct {
	Case             string  `json:"case"` // put, get, read4k, concurrent-writes
	Encrypted        bool    `json:"encrypted"`
	Clients          int     `json:"clients"`  // concurrent clients (writers for concurrent-writes)
	MBPerS           float64 `json:"mb_per_s"` // 10^6 bytes/s, all clients together
	FloorDiskMBPS    float64 `json:"floor_disk_mb_per_s"`
	FloorStreamMBPS  float64 `json:"floor_stream_mb_per_s"`
	FloorCryptoMBPS  float64 `json:"floor_crypto_mb_per_s"`
	ReadOffset       int64   `json:"read_offset"`         // read4k: where in the block
	MedianUS         float64 `json:"median_us"`           // read4k: median ReadAt latency
	DiskBytesPerRead float64 `json:"disk_bytes_per_read"` // read4k: lbm data-file bytes per read, all datanodes
	PeakHeapMiB      float64 `json:"peak_heap_mib"`       // concurrent-writes: see the package doc
	// concurrent-writes: the peak of the heap the last GC found live, above
	// its value at the baseline (PeakHeapMiB counts garbage not yet
	// collected too), and the baseline heap itself.
	PeakLiveHeapMiB float64 `json:"peak_live_heap_mib,omitempty"`
	BaseHeapMiB     float64 `json:"base_heap_mib,omitempty"`

	// Ratio is the row's figure against its floor or bound (Against),
	// the median of per-run ratios; Floor and Goal are the issue's
	// acceptance and goal values (0: none), AtMost says which side passes.
	Ratio   float64   `json:"ratio,omitempty"`
	Against string    `json:"against,omitempty"`
	Floor   float64   `json:"floor,omitempty"`
	Goal    float64   `json:"goal,omitempty"`
	AtMost  bool      `json:"at_most,omitempty"`
	Runs    []float64 `json:"runs"` // the row's main figure, run by run
	MTLS    bool      `json:"mtls"`
	Bytes   int64     `json:"bytes"` // bytes moved per run (read4k: per read)
	Commit  string    `json:"commit,omitempty"`
	// read4k: lbm's bytes per checksum (0: the store does not say) and
	// DiskBytesPerRead in those chunks.
	BytesPerChecksum int     `json:"bytes_per_checksum,omitempty"`
	ChunksPerRead    float64 `json:"chunks_per_read,omitempty"`
}

const (
	readSize    = 4 << 10
	replication = 3
	opTimeout   = 30 * time.Minute
)

// runFigures is what one run measured on one cluster.
type runFigures struct {
	disk, stream, crypto float64
	put, get             map[int]float64 // clients -> MB/s
	readUS, readDisk     [2]float64      // offset 0, offset end
	bpc                  int             // bytes per checksum of the read4k block (0: unknown)
	cwMBPS               float64
	cwHeap               heapFigures
}

// Run measures every case cfg.Runs times per encryption setting, prints
// the table to out and progress to logw, and returns the rows.
func Run(ctx context.Context, cfg Config, out, logw io.Writer) ([]Row, error) {
	logf := func(format string, args ...any) { fmt.Fprintf(logw, format+"\n", args...) }
	parent := cfg.Dir
	if parent == "" {
		d, err := os.MkdirTemp("", "blockfs-datapath-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		parent = d
	}
	capBytes, capName := inflightCap(cfg.InflightCap)
	pat := newPattern(min(cfg.BlockSize, 64<<20), 1)
	rigs := make([]*rig, len(cfg.Encrypt))
	defer func() {
		for _, r := range rigs {
			if r != nil {
				r.close()
			}
		}
	}()
	for i, enc := range cfg.Encrypt {
		dir := filepath.Join(parent, map[bool]string{false: "plain", true: "encrypted"}[enc])
		r, err := startRig(ctx, cfg, enc, dir, pat)
		if err != nil {
			return nil, fmt.Errorf("starting the %s cluster: %w", encName(enc), err)
		}
		rigs[i] = r
	}
	commit := dataPathCommit()
	fmt.Fprintf(out, "datapath: %s per case, %d run(s), blocks %s, io %s, 1 and %d clients, 4 KiB reads x%d per offset, %d writers of %s, %s, message %d B, commit %s\n",
		human(cfg.Size), cfg.Runs, human(cfg.BlockSize), human(int64(cfg.IOSize)), cfg.Clients, cfg.Reads, cfg.Writers, human(cfg.WriteBlock),
		authName(cfg.MTLS), rigs[0].msgSize, commit)

	figs := make([][]runFigures, len(rigs))
	for run := 0; run < cfg.Runs; run++ {
		order := make([]int, len(rigs))
		for i := range order {
			order[i] = i
		}
		if run%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			r := rigs[i]
			logf("run %d/%d, %s", run+1, cfg.Runs, encName(r.enc))
			f, err := r.measure(ctx, run, logf)
			if err != nil {
				return nil, fmt.Errorf("run %d, %s: %w", run+1, encName(r.enc), err)
			}
			figs[i] = append(figs[i], f)
		}
	}
	var rows []Row
	for i, r := range rigs {
		rows = append(rows, r.rows(figs[i], capBytes)...)
	}
	for i := range rows {
		rows[i].MTLS, rows[i].Commit = cfg.MTLS, commit
	}
	printTable(out, rows)
	printFloors(out, rows, capBytes, capName)
	return rows, nil
}

func encName(enc bool) string {
	if enc {
		return "encrypted"
	}
	return "plain"
}

func authName(mtls bool) string {
	if mtls {
		return "mTLS"
	}
	return "simple auth (plaintext)"
}

// rig is one running cluster with its clients and its stream floor.
type rig struct {
	cfg     Config
	enc     bool
	c       *localcluster.Cluster
	clients []*client.Client
	pat     pattern
	floor   *streamFloor
	msgSize int
}

func startRig(ctx context.Context, cfg Config, enc bool, dir string, pat pattern) (*rig, error) {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := localcluster.Start(sctx, localcluster.Config{
		Namenodes: 3, Datanodes: 3, Dir: dir, MTLS: cfg.MTLS,
		Namenode: func(_ int, nc *namenode.Config) {
			if cfg.BytesPerChecksum != 0 {
				nc.Namespace.BytesPerChecksum = cfg.BytesPerChecksum
			}
			nc.Namespace.MaxBlockSize = namenode.DefaultConfig().Namespace.MaxBlockSize
		},
		Datanode: func(i int, dc *datanode.Config) {
			dc.Store.Encrypt = enc
			// localcluster keeps containers and blocks small for its
			// tests; a 128 MiB block needs the production defaults.
			dc.Store.MaxContainerSize = lbm.DefaultConfig().MaxContainerSize
			dc.MaxBlockSize = datanode.DefaultConfig().MaxBlockSize
		},
	})
	if err != nil {
		return nil, err
	}
	r := &rig{cfg: cfg, enc: enc, c: c, pat: pat, msgSize: datanode.DefaultConfig().ChunkSize}
	for range cfg.Clients {
		cl, err := c.Client()
		if err != nil {
			r.close()
			return nil, err
		}
		r.clients = append(r.clients, cl)
	}
	if r.floor, err = newStreamFloor(c, cfg.MTLS, r.msgSize, pat); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *rig) close() {
	for _, cl := range r.clients {
		cl.Close()
	}
	if r.floor != nil {
		r.floor.close()
	}
	r.c.Close()
}

// dataDir is where datanode 1 keeps its first container directory.
func (r *rig) dataDir() string { return filepath.Join(r.c.Dir(), "dn1", "data1") }

// measure runs the floors and the cases once, each floor right before the
// cases it bounds.
func (r *rig) measure(ctx context.Context, run int, logf func(string, ...any)) (runFigures, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cfg := r.cfg
	f := runFigures{put: map[int]float64{}, get: map[int]float64{}}
	var err error
	if f.crypto, err = cryptoFloor(cfg.Size, r.pat, cfg.IOSize); err != nil {
		return f, err
	}
	if f.disk, err = diskFloor(r.dataDir(), cfg.Size, r.pat, cfg.IOSize); err != nil {
		return f, err
	}
	dir := fmt.Sprintf("/datapath/r%d", run)
	counts := []int{1}
	if cfg.Clients > 1 {
		counts = append(counts, cfg.Clients)
	}
	for _, n := range counts {
		if f.put[n], err = r.put(ctx, fmt.Sprintf("%s/c%d", dir, n), n); err != nil {
			return f, fmt.Errorf("put, %d client(s): %w", n, err)
		}
		logf("  put %d client(s): %.1f MB/s (disk floor %.1f)", n, f.put[n], f.disk)
	}
	if f.stream, err = r.floor.measure(ctx, cfg.Size); err != nil {
		return f, fmt.Errorf("stream floor: %w", err)
	}
	for _, n := range counts {
		if f.get[n], err = r.get(ctx, fmt.Sprintf("%s/c%d", dir, n), n); err != nil {
			return f, fmt.Errorf("get, %d client(s): %w", n, err)
		}
		logf("  get %d client(s): %.1f MB/s (stream floor %.1f)", n, f.get[n], f.stream)
	}
	if err := r.clients[0].Delete(ctx, dir, true); err != nil {
		return f, err
	}
	if f.readUS, f.readDisk, f.bpc, err = r.read4k(ctx, run); err != nil {
		return f, fmt.Errorf("read4k: %w", err)
	}
	logf("  read4k: %.0f / %.0f us, %.0f / %.0f disk bytes per read", f.readUS[0], f.readUS[1], f.readDisk[0], f.readDisk[1])
	if f.cwMBPS, f.cwHeap, err = r.concurrentWrites(ctx, fmt.Sprintf("/datapath/cw%d", run)); err != nil {
		return f, fmt.Errorf("concurrent-writes: %w", err)
	}
	logf("  concurrent-writes: %.1f MB/s, peak heap +%.0f MiB (live +%.0f MiB) over %.0f MiB", f.cwMBPS, f.cwHeap.peak, f.cwHeap.peakLive, f.cwHeap.base)
	if err := r.clients[0].Delete(ctx, fmt.Sprintf("/datapath/cw%d", run), true); err != nil {
		return f, err
	}
	return f, nil
}

// split divides total bytes among n clients.
func split(total int64, n int) []int64 {
	parts := make([]int64, n)
	for i := range parts {
		parts[i] = total / int64(n)
	}
	parts[n-1] += total % int64(n)
	return parts
}

// put writes cfg.Size bytes as n files under dir, one client each, all at
// once, and returns MB/s from the first Create to the last Close.
func (r *rig) put(ctx context.Context, dir string, n int) (float64, error) {
	parts := split(r.cfg.Size, n)
	start := time.Now()
	err := parallel(n, func(i int) error {
		return writeFile(ctx, r.clients[i], fmt.Sprintf("%s/f%d", dir, i), parts[i], r.cfg.BlockSize, r.cfg.IOSize, r.pat)
	})
	return mbps(r.cfg.Size, time.Since(start)), err
}

// writeFile writes size bytes of pat to p in ioSize pieces, as dfs put does.
func writeFile(ctx context.Context, cl *client.Client, p string, size, blockSize int64, ioSize int, pat pattern) error {
	w, err := cl.Create(ctx, p, client.CreateOptions{Overwrite: true, Replication: replication, BlockSize: uint64(blockSize)})
	if err != nil {
		return err
	}
	scratch := make([]byte, ioSize)
	for off := int64(0); off < size; {
		k := int(min(int64(ioSize), size-off))
		if _, err := w.Write(pat.at(off, k, scratch)); err != nil {
			w.Close()
			return err
		}
		off += int64(k)
	}
	return w.Close()
}

// get reads back the files put wrote, each by the client that wrote it,
// in ioSize Read calls (as dfs get does), checking every byte.
func (r *rig) get(ctx context.Context, dir string, n int) (float64, error) {
	parts := split(r.cfg.Size, n)
	start := time.Now()
	err := parallel(n, func(i int) error {
		p := fmt.Sprintf("%s/f%d", dir, i)
		rd, err := r.clients[i].Open(ctx, p)
		if err != nil {
			return err
		}
		if rd.Size() != parts[i] {
			return fmt.Errorf("%s: size %d, wrote %d", p, rd.Size(), parts[i])
		}
		buf := make([]byte, r.cfg.IOSize)
		for off := int64(0); off < parts[i]; {
			k, err := rd.Read(buf[:min(int64(len(buf)), parts[i]-off)])
			if k > 0 && !r.pat.equal(buf[:k], off) {
				return fmt.Errorf("%s: wrong bytes at %d", p, off)
			}
			off += int64(k)
			if err != nil && !(errors.Is(err, io.EOF) && off == parts[i]) {
				return fmt.Errorf("%s at %d: %w", p, off, err)
			}
		}
		return nil
	})
	return mbps(r.cfg.Size, time.Since(start)), err
}

// read4k writes one file of one block, then reads 4 KiB at its start and
// at its end, alternating batches, timing each ReadAt and counting the
// bytes lbm read from its data files per batch (all datanodes: the reader
// picks the replica); disk bytes per read is the median batch's.
func (r *rig) read4k(ctx context.Context, run int) (medUS, diskPerRead [2]float64, bpc int, err error) {
	p := fmt.Sprintf("/datapath/read4k-%d", run)
	cl := r.clients[0]
	if err := writeFile(ctx, cl, p, r.cfg.BlockSize, r.cfg.BlockSize, r.cfg.IOSize, r.pat); err != nil {
		return medUS, diskPerRead, bpc, err
	}
	defer cl.Delete(ctx, p, false)
	rd, err := cl.Open(ctx, p)
	if err != nil {
		return medUS, diskPerRead, bpc, err
	}
	if locs := rd.Locations(); len(locs.Blocks) == 1 {
		bpc = bytesPerChecksum(r.c, locs.Blocks[0].Block.Id)
	}
	offs := [2]int64{0, r.cfg.BlockSize - readSize}
	buf := make([]byte, readSize)
	read := func(off int64) (time.Duration, error) {
		t := time.Now()
		n, err := rd.ReadAt(buf, off)
		d := time.Since(t)
		if err != nil || n != readSize {
			return d, fmt.Errorf("ReadAt %d: %d bytes, %v", off, n, err)
		}
		if !r.pat.equal(buf, off) {
			return d, fmt.Errorf("ReadAt %d: wrong bytes", off)
		}
		return d, nil
	}
	for _, off := range offs { // connections, token cache
		if _, err := read(off); err != nil {
			return medUS, diskPerRead, bpc, err
		}
	}
	const batch = 10
	var lat, disk [2][]float64
	for done := 0; done < r.cfg.Reads; done += batch {
		for k, off := range offs {
			before := diskBytesRead(r.c)
			j := 0
			for ; j < batch && done+j < r.cfg.Reads; j++ {
				d, err := read(off)
				if err != nil {
					return medUS, diskPerRead, bpc, err
				}
				lat[k] = append(lat[k], float64(d.Nanoseconds())/1e3)
			}
			disk[k] = append(disk[k], float64(diskBytesRead(r.c)-before)/float64(j))
		}
	}
	for k := range offs {
		medUS[k] = results.Median(lat[k])
		// The median batch: a background read of a whole block (a verify
		// or a re-replication) lands in one batch and is left out.
		diskPerRead[k] = results.Median(disk[k])
	}
	return medUS, diskPerRead, bpc, nil
}

// parallel runs fn(0..n-1) at once and returns the first error.
func parallel(n int, fn func(i int) error) error {
	errc := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errc[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errc...)
}

func mbps(bytes int64, d time.Duration) float64 { return float64(bytes) / 1e6 / d.Seconds() }

func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// pattern is the content of every file: byte o of a file is p[o%len(p)],
// random, so nothing compresses and a misplaced read shows.
type pattern []byte

func newPattern(n int64, seed uint64) pattern {
	p := make(pattern, n)
	rng := rand.NewChaCha8([32]byte{byte(seed)})
	rng.Read(p)
	return p
}

// at returns the n bytes at off: a slice of p, or scratch filled when
// they wrap.
func (p pattern) at(off int64, n int, scratch []byte) []byte {
	i := int(off % int64(len(p)))
	if i+n <= len(p) {
		return p[i : i+n]
	}
	scratch = scratch[:n]
	k := copy(scratch, p[i:])
	for k < n {
		k += copy(scratch[k:], p)
	}
	return scratch
}

// equal reports whether b is the file content at off.
func (p pattern) equal(b []byte, off int64) bool {
	for len(b) > 0 {
		i := int(off % int64(len(p)))
		k := min(len(b), len(p)-i)
		if string(b[:k]) != string(p[i:i+k]) {
			return false
		}
		b, off = b[k:], off+int64(k)
	}
	return true
}
