// Command loadgen reproduces the HDFS-1081 experiment against blockfs: it
// writes one file per block count, then times GetBlockLocations round
// trips per file, once per block-token mode, next to the gRPC health check
// of the same namenode (the floor under any RPC), and prints the table of
// the seed (mean, median, std dev, p99 per block count), the ratio of each
// mode to per-block, and optionally JSON, CSV and a log-log plot.
//
//	loadgen --local --blocks 1,10,100,1000 --calls 100 \
//	  --token-modes per-block,per-request,cached --json out.json --plot out.svg
//	loadgen --namenodes 127.0.0.1:9001,127.0.0.1:9002,127.0.0.1:9003 --blocks 1,10,100,1000
//
// With --protocol hdfs the same sweep goes through the namenode's HDFS door
// (Hadoop IPC, ClientProtocol.getBlockLocations, decoded as an HDFS client
// decodes it); with --protocol both the two doors' series are interleaved
// on the same clusters and a table compares them:
//
//	loadgen --local --protocol both --blocks 1,10,100,1000 --plot out.svg
//	loadgen --namenodes ... --protocol hdfs --hdfs-namenodes 127.0.0.1:8020,...
//
// Every flag can also be set from the environment as BLOCKFS_LOADGEN_<FLAG>;
// --namenodes also reads BLOCKFS_NAMENODES. Exit status: 0 on success, 1 when
// the sweep failed, 2 on bad input (flags, unknown mode, no reachable
// namenode).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/internal/node/cliflag"
	"github.com/blockfs/blockfs/security"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Options are loadgen's parsed flags.
type Options struct {
	Namenodes []string
	Local     bool
	// Doors are the doors swept (--protocol): DoorGRPC, DoorHDFS or both,
	// and HDFSNamenodes the HDFS doors' addresses of a running cluster.
	Doors         []string
	HDFSNamenodes []string
	Blocks        []int
	Calls         int
	Warmup        int
	BlockSize     uint64
	Replication   uint32
	// Modes are the token modes to sweep, by name; empty means the running
	// cluster's mode (or all three with Local).
	Modes       []string
	Concurrency int
	Read        bool
	CallTimeout time.Duration
	ConnTimeout time.Duration
	User        string
	TLS         []grpc.DialOption // mTLS against a running cluster
	Dir         string
	JSON, CSV   string
	Plot        string
	NoProgress  bool
	CPUProfile  string // pprof CPU profile of the whole run (--local: client and cluster alike)
	MemProfile  string // pprof allocation profile, written at the end
	// Datanodes and Namenodes of a --local cluster.
	LocalNamenodes, LocalDatanodes int
}

// usageError is bad input: exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// allModes is the sweep order of --local when no mode is named: the
// baseline first, so the ratios have something to divide by.
var allModes = []string{"per-block", "per-request", "cached"}

func parseFlags(args []string, stderr io.Writer) (Options, error) {
	o := Options{}
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := cliflag.New(fs, "BLOCKFS_LOADGEN_")
	var nns, blocks, modes, protocol, hdfsNNs string
	var repl int
	nnDefault := os.Getenv("BLOCKFS_NAMENODES")
	f.String(&nns, "namenodes", nnDefault, "comma-separated gRPC addresses of the namenodes (also $BLOCKFS_NAMENODES)")
	f.String(&protocol, "protocol", "grpc", "door to sweep: grpc (blockfs's client service), hdfs (the namenode's Hadoop IPC door, as an HDFS client calls it) or both, interleaved on the same clusters")
	f.String(&hdfsNNs, "hdfs-namenodes", "", "comma-separated HDFS door (Hadoop IPC) addresses of the namenodes, with --protocol hdfs or both against a running cluster (in the order of --namenodes, so the same namenode is timed through both)")
	f.Bool(&o.Local, "local", false, "start an in-process cluster (3 namenodes, 5 datanodes) instead, and tear it down afterwards")
	f.String(&blocks, "blocks", "1,10,100,1000", "comma-separated block counts; one file is written per count")
	f.Int(&o.Calls, "calls", 100, "timed GetBlockLocations calls per file")
	f.Int(&o.Warmup, "warmup", 10, "untimed calls per file before the timed ones")
	f.Uint64(&o.BlockSize, "block-size", 1024, "block size of the files written, bytes")
	f.Int(&repl, "replication", 3, "replication of the files written")
	f.String(&modes, "token-modes", "", "comma-separated token modes to sweep: per-block, per-request, cached (default: the cluster's mode; with --local all three)")
	f.Int(&o.Concurrency, "concurrency", 1, "parallel callers per file; the report adds throughput")
	f.Bool(&o.Read, "read", false, "also time opening each file and reading its first block (includes the datanode's token check; the gRPC door only)")
	f.Duration(&o.CallTimeout, "call-timeout", 10*time.Second, "deadline of each timed call (a call that misses it counts as an error)")
	f.Duration(&o.ConnTimeout, "connect-timeout", 10*time.Second, "how long to wait for a reachable namenode at start")
	f.String(&o.User, "user", "", "user to act as (default: the OS user; root with --local)")
	var tlsCA, tlsCert, tlsKey string
	f.String(&tlsCA, "tls-ca", "", "cluster CA (PEM), against an mTLS cluster")
	f.String(&tlsCert, "tls-cert", "", "client certificate (PEM); its spiffe://<trust-domain>/user/<name> URI SAN is the user under mTLS")
	f.String(&tlsKey, "tls-key", "", "client private key (PEM)")
	f.String(&o.Dir, "dir", "/loadgen", "directory the test files are written under (removed afterwards)")
	f.String(&o.JSON, "json", "", "write the rows as a JSON array to this file")
	f.String(&o.CSV, "csv", "", "write the rows as CSV to this file")
	f.String(&o.Plot, "plot", "", "write a log-log plot of latency against block count (each mode's median and p25-p75 band, the legend beside the axes) to this .svg or .png file")
	f.String(&o.CPUProfile, "cpuprofile", "", "write a pprof CPU profile of the whole run to this file (with --local it covers the in-process cluster too)")
	f.String(&o.MemProfile, "memprofile", "", "write a pprof allocation profile of the whole run to this file at its end")
	f.Bool(&o.NoProgress, "no-progress", false, "no progress bars on stderr (they are drawn only when stderr is a terminal)")
	f.Int(&o.LocalNamenodes, "local-namenodes", 3, "namenodes of the --local cluster")
	f.Int(&o.LocalDatanodes, "local-datanodes", 5, "datanodes of the --local cluster")
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return o, usagef("unexpected argument %q", fs.Arg(0))
	}
	tlsOpts, err := cliflag.ClientTLS(tlsCA, tlsCert, tlsKey)
	if err != nil {
		return o, usageError{err.Error()}
	}
	o.TLS = tlsOpts
	o.Namenodes = cliflag.SplitList(nns)
	explicitNN := false
	fs.Visit(func(fl *flag.Flag) { explicitNN = explicitNN || fl.Name == "namenodes" })
	if o.Local && !explicitNN {
		o.Namenodes = nil // --local wins over the environment
	}
	if o.Doors, err = doorsOf(protocol); err != nil {
		return o, err
	}
	o.HDFSNamenodes = cliflag.SplitList(hdfsNNs)
	if o.Blocks, err = parseBlocks(blocks); err != nil {
		return o, err
	}
	for _, m := range cliflag.SplitList(modes) {
		if _, err := security.ParseMode(m); err != nil || m == "" {
			return o, usagef("unknown token mode %q (want per-block, per-request or cached)", m)
		}
		for _, seen := range o.Modes {
			if seen == m {
				return o, usagef("token mode %q named twice", m)
			}
		}
		o.Modes = append(o.Modes, m)
	}
	switch {
	case !o.Local && len(o.Namenodes) == 0:
		return o, usagef("no namenodes: pass --namenodes (or set BLOCKFS_NAMENODES), or --local")
	case o.Local && len(o.Namenodes) > 0:
		return o, usagef("--local and --namenodes are exclusive")
	case o.hasDoor(DoorHDFS) && !o.Local && len(o.HDFSNamenodes) == 0:
		return o, usagef("--protocol %s against a running cluster needs --hdfs-namenodes (the namenodes' HDFS door addresses)", protocol)
	case o.Local && len(o.HDFSNamenodes) > 0:
		return o, usagef("--local and --hdfs-namenodes are exclusive (the local cluster's doors are found by themselves)")
	case len(o.HDFSNamenodes) > 0 && !o.hasDoor(DoorHDFS):
		return o, usagef("--hdfs-namenodes needs --protocol hdfs or both")
	case o.Read && !o.hasDoor(DoorGRPC):
		return o, usagef("--read times the gRPC door's read path: use --protocol grpc or both")
	case o.Calls < 1:
		return o, usagef("--calls %d: must be at least 1", o.Calls)
	case o.Warmup < 0:
		return o, usagef("--warmup %d: must not be negative", o.Warmup)
	case o.BlockSize < 1:
		return o, usagef("--block-size must be at least 1 byte")
	case repl < 1 || repl > 32:
		return o, usagef("--replication %d: must be in 1..32", repl)
	case o.Concurrency < 1:
		return o, usagef("--concurrency %d: must be at least 1", o.Concurrency)
	case o.CallTimeout <= 0 || o.ConnTimeout <= 0:
		return o, usagef("--call-timeout and --connect-timeout must be positive")
	case o.Local && (o.LocalNamenodes < 1 || o.LocalDatanodes < 1):
		return o, usagef("--local-namenodes and --local-datanodes must be at least 1")
	case o.Local && repl > o.LocalDatanodes:
		return o, usagef("--replication %d exceeds the %d datanodes of the --local cluster", repl, o.LocalDatanodes)
	case !strings.HasPrefix(o.Dir, "/") || o.Dir == "/":
		return o, usagef("--dir %q: must be an absolute path below /", o.Dir)
	}
	if o.Plot != "" && !strings.HasSuffix(o.Plot, ".svg") && !strings.HasSuffix(o.Plot, ".png") {
		return o, usagef("--plot %q: the file name must end in .svg or .png", o.Plot)
	}
	o.Replication = uint32(repl)
	if o.Local && len(o.Modes) == 0 {
		o.Modes = allModes
	}
	return o, nil
}

// parseBlocks parses "1,10,100": positive, distinct; returned in the order
// given.
func parseBlocks(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, p := range cliflag.SplitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, usagef("--blocks %q: %q is not a positive block count", s, p)
		}
		if n > 1_000_000 {
			return nil, usagef("--blocks %q: %d blocks is more than a sweep should write", s, n)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, usagef("--blocks %q: no block counts", s)
	}
	return out, nil
}

// run is loadgen's main; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 2
	}
	stopProfiles, err := startProfiles(o)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	res, err := Sweep(ctx, o, stderr)
	if perr := stopProfiles(); perr != nil {
		fmt.Fprintln(stderr, "loadgen:", perr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		if res == nil {
			return 1
		}
	}
	if res == nil {
		return 1
	}
	code := 0
	if err != nil {
		code = 1
	}
	var rows []Row
	for _, r := range res {
		WriteTables(stdout, r)
		rows = append(rows, r.Rows()...)
	}
	doorTable(stdout, res)
	if o.JSON != "" {
		if werr := writeFile(o.JSON, func(w io.Writer) error { return WriteJSON(w, rows) }); werr != nil {
			fmt.Fprintln(stderr, "loadgen:", werr)
			code = 1
		}
	}
	if o.CSV != "" {
		if werr := writeFile(o.CSV, func(w io.Writer) error { return WriteCSV(w, rows) }); werr != nil {
			fmt.Fprintln(stderr, "loadgen:", werr)
			code = 1
		}
	}
	if o.Plot != "" {
		if perr := Plot(res, o.Plot); perr != nil {
			fmt.Fprintln(stderr, "loadgen:", perr)
			code = 1
		} else {
			fmt.Fprintln(stderr, "loadgen: plot written to", o.Plot)
		}
	}
	for _, r := range res {
		if r.Errors() > 0 {
			fmt.Fprintf(stderr, "loadgen: %s door: %d calls failed (counted in the errors row)\n", r.Door, r.Errors())
		}
	}
	return code
}

// startProfiles starts the CPU profile --cpuprofile names; the func it
// returns stops it and writes --memprofile's allocation profile.
func startProfiles(o Options) (func() error, error) {
	var cpu *os.File
	if o.CPUProfile != "" {
		var err error
		if cpu, err = os.Create(o.CPUProfile); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, err
		}
	}
	return func() error {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return err
			}
		}
		if o.MemProfile == "" {
			return nil
		}
		return writeFile(o.MemProfile, func(w io.Writer) error { return pprof.Lookup("allocs").WriteTo(w, 0) })
	}, nil
}

func writeFile(name string, fn func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.Close()
}
