// Command datapath measures the block data path of an in-process cluster
// (3 namenodes, 3 datanodes, replication 3) against floors measured in the
// same run on the same machine:
//
//   - disk:   the same bytes written to one file in a datanode's data
//     directory, fsynced at the end (dd conv=fsync);
//   - stream: the same bytes as one bare gRPC server stream on loopback, in
//     the data path's message size and under the cluster's TLS setting;
//   - crypto: AES-256-CTR and CRC32C over the same bytes, one goroutine.
//
// The cases, each through today's client API (Create/Write/Close,
// Open/Read/ReadAt):
//
//   - put, get:  one client moving --size bytes, then --clients clients
//     moving --size bytes between them (size/clients each, concurrently);
//   - read4k:    4 KiB ReadAt at offset 0 and at the last 4 KiB of a
//     --block-size block: median latency and the bytes lbm read from its
//     data files per read (all datanodes summed);
//   - concurrent-writes: --writers files of one --write-block block each,
//     written at once by a child process (this program re-executed) so that
//     the client buffers are not in the heap being measured; the peak heap
//     of this process (3 namenodes + 3 datanodes) minus the baseline before
//     the writes.
//
// Each run measures every floor and case once per encryption setting
// (plain and encrypted at rest alternate their order run by run); the rows
// are medians over --runs, and every ratio is the median of per-run
// ratios, so it compares figures taken minutes apart at most.
//
//	go run ./bench/datapath --size 1GiB --json out.json
//	go run ./bench/datapath --quick     # a CI smoke run, seconds
package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/blockfs/blockfs/bench/internal/results"
)

func main() {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain(os.Stdin, os.Stdout))
	}
	log.SetFlags(0)
	def := DefaultConfig()
	size := flag.String("size", "1GiB", "bytes each put/get case moves (KiB, MiB, GiB suffixes)")
	blockSize := flag.String("block-size", "64MiB", "block size of every file; read4k reads the last 4 KiB of one such block")
	writeBlock := flag.String("write-block", "128MiB", "concurrent-writes: the one block each writer writes")
	ioSize := flag.String("io-size", "4MiB", "the buffer each Write and Read call passes (dfs put/get use 4 MiB)")
	encrypt := flag.String("encrypt", "both", "encryption at rest: both, on or off")
	quick := flag.Bool("quick", false, "CI smoke: 16 MiB, 4 MiB blocks, 1 run, 20 reads per offset, 8 writers of 4 MiB blocks (flags given explicitly still win)")
	runs := flag.Int("runs", def.Runs, "runs; rows are medians over runs")
	clients := flag.Int("clients", def.Clients, "concurrent clients of the second put/get row")
	reads := flag.Int("reads", def.Reads, "4 KiB reads per offset and run")
	writers := flag.Int("writers", def.Writers, "concurrent-writes: concurrent writers")
	mtls := flag.Bool("mtls", def.MTLS, "run the cluster and the stream floor under mTLS, as production datanodes do by default; false: simple auth on plaintext loopback")
	dir := flag.String("dir", "", "parent directory of the cluster data and the disk floor's file (default: a temp dir, removed afterwards)")
	jsonOut := flag.String("json", "", "write the rows as JSON to this file")
	bpc := flag.Uint("bytes-per-checksum", 0, "the namenodes' --bytes-per-checksum: the chunk writers checksum (0: the namenode default, 512)")
	inflight := flag.Int64("inflight-cap", -1, "datanode in-flight write cap in bytes, for the heap bound; -1: look for one in datanode.DefaultConfig")
	flag.Parse()

	cfg := def
	if *quick {
		cfg = QuickConfig()
	}
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	sizeFlag := func(name, v string, dst *int64) {
		if *quick && !given[name] {
			return // the quick preset stands
		}
		n, err := results.ParseSize(v)
		if err != nil {
			log.Fatalf("--%s: %v", name, err)
		}
		*dst = n
	}
	sizeFlag("size", *size, &cfg.Size)
	sizeFlag("block-size", *blockSize, &cfg.BlockSize)
	sizeFlag("write-block", *writeBlock, &cfg.WriteBlock)
	io64 := int64(cfg.IOSize)
	sizeFlag("io-size", *ioSize, &io64)
	cfg.IOSize = int(io64)
	intFlag := func(name string, v int, dst *int) {
		if !*quick || given[name] {
			*dst = v
		}
	}
	intFlag("runs", *runs, &cfg.Runs)
	intFlag("clients", *clients, &cfg.Clients)
	intFlag("reads", *reads, &cfg.Reads)
	intFlag("writers", *writers, &cfg.Writers)
	cfg.MTLS, cfg.Dir, cfg.JSON, cfg.InflightCap = *mtls, *dir, *jsonOut, *inflight
	cfg.BytesPerChecksum = uint32(*bpc)
	switch *encrypt {
	case "both":
		cfg.Encrypt = []bool{false, true}
	case "on":
		cfg.Encrypt = []bool{true}
	case "off":
		cfg.Encrypt = []bool{false}
	default:
		log.Fatalf("--encrypt must be both, on or off, not %q", *encrypt)
	}
	if err := cfg.Validate(); err != nil {
		log.Fatal(err)
	}
	rows, err := Run(context.Background(), cfg, os.Stdout, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	if cfg.JSON != "" {
		if err := results.WriteJSON(cfg.JSON, rows); err != nil {
			log.Fatal(err)
		}
	}
}
