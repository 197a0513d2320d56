// Command dfs is the blockfs command line, after `hdfs dfs`:
//
//	dfs [global flags] COMMAND [flags] ARGS
//
//	ls [-R] [PATH...]          list a directory (or a file)
//	mkdir [-p] PATH...         make directories
//	put [-f] LOCAL REMOTE      copy a local file ("-": stdin) into blockfs
//	get REMOTE LOCAL           copy a file out of blockfs ("-": stdout)
//	cat PATH...                print files
//	rm [-r] PATH...            remove files (and directories with -r)
//	mv SRC DST                 rename
//	stat PATH...               show a path's status
//	checksum [-hdfs] PATH...   a file's CRC32C (COMPOSITE-CRC32C), from its block CRCs; -hdfs: MD5-of-MD5-of-CRC32C
//	chmod MODE PATH...         set permission bits (octal)
//	chown OWNER[:GROUP] PATH...  set owner and group
//	locations PATH             block locations and which replicas are live
//	cluster                    leader, members, datanodes, space
//	fsck [PATH]                missing, under-replicated and corrupt blocks
//	setQuota N DIR...          namespace quota (superuser); clrQuota DIR... clears it
//	setSpaceQuota N DIR...     space quota, N with k/m/g/t suffixes (superuser); clrSpaceQuota DIR...
//	count [-q] [-h] PATH...    directories, files, bytes (and quotas) under paths
//	createSnapshot DIR [NAME]  snapshot a snapshottable directory; read it under DIR/.snapshot/NAME
//	deleteSnapshot DIR NAME, renameSnapshot DIR OLD NEW, lsSnapshottableDir
//
// Global flags: --namenodes (or $BLOCKFS_NAMENODES), --user (or
// $BLOCKFS_USER, default the OS user), --json, --timeout, --retry-for (how
// long to retry while no namenode accepts a connection). Errors go to
// stderr naming the path; exit status 1 on failure, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/blockfs/blockfs/internal/node/cliflag"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command runs with.
type env struct {
	ctx      context.Context
	cl       *client.Client
	json     bool
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	progress bool // draw progress bars (stderr is a terminal)
	failed   bool
	hinted   bool // the unreachable hint was given
}

// command is one dfs subcommand.
type command struct {
	usage string // after the command name
	help  string
	// noClient commands do not connect (none yet).
	run func(e *env, fs *flag.FlagSet, args []string) error
	// flags registers the command's own flags.
	flags func(fs *flag.FlagSet)
	// nargs is the allowed argument count range; max -1 is unbounded.
	minArgs, maxArgs int
}

var commands map[string]*command

func init() {
	commands = map[string]*command{
		"ls":            {usage: "[-R] [PATH...]", help: "list directories (or files); -R recursively", run: cmdLs, flags: boolFlag("R", "recursive"), minArgs: 0, maxArgs: -1},
		"mkdir":         {usage: "[-p] PATH...", help: "make directories; -p makes parents and accepts existing ones", run: cmdMkdir, flags: boolFlag("p", "parents"), minArgs: 1, maxArgs: -1},
		"put":           {usage: "[-f] [-replication N] [-blocksize BYTES] LOCAL REMOTE", help: "copy a local file (- for stdin) into blockfs; -f overwrites", run: cmdPut, flags: putFlags, minArgs: 2, maxArgs: 2},
		"appendToFile":  {usage: "LOCAL... REMOTE", help: "append local files (- for stdin) to a blockfs file, creating it if missing; a short last block is reopened and filled first", run: cmdAppendToFile, minArgs: 2, maxArgs: -1},
		"recover-lease": {usage: "[-nowait] PATH...", help: "recover files a dead writer left open: the last block is cut to what every replica holds and the file closed (waits unless -nowait)", run: cmdRecoverLease, flags: boolFlag("nowait", "only start the recovery"), minArgs: 1, maxArgs: -1},
		"get":           {usage: "REMOTE LOCAL", help: "copy a file out of blockfs (LOCAL - for stdout)", run: cmdGet, minArgs: 2, maxArgs: 2},
		"cat":           {usage: "PATH...", help: "print files", run: cmdCat, minArgs: 1, maxArgs: -1},
		"rm": {usage: "[-r] [-skipTrash] PATH...", help: "remove files; -r removes directories and their contents; into the trash if the cluster has one (--trash-interval), for good with -skipTrash", run: cmdRm,
			flags: func(fs *flag.FlagSet) {
				fs.Bool("r", false, "recursive")
				fs.Bool("skipTrash", false, "delete for good, not into the trash")
			}, minArgs: 1, maxArgs: -1},
		"expunge":       {usage: "", help: "empty your trash: delete checkpoints older than the trash interval, checkpoint the rest", run: cmdExpunge, minArgs: 0, maxArgs: 0},
		"mv":            {usage: "SRC DST", help: "rename SRC to DST (into DST if it is a directory)", run: cmdMv, minArgs: 2, maxArgs: 2},
		"stat":          {usage: "PATH...", help: "show a path's status", run: cmdStat, minArgs: 1, maxArgs: -1},
		"checksum":      {usage: "[-hdfs] PATH...", help: "print each file's checksum, the CRC32C of its bytes (as hdfs dfs -checksum in COMPOSITE_CRC mode): PATH, COMPOSITE-CRC32C, 8 hex digits; -hdfs: HDFS's default MD5-of-MD5-of-CRC32C, as hadoop fs -checksum prints it (reads the file)", run: cmdChecksum, flags: boolFlag("hdfs", "HDFS's MD5-of-MD5-of-CRC32C"), minArgs: 1, maxArgs: -1},
		"chmod":         {usage: "MODE PATH...", help: "set permission bits, in octal (e.g. 755, 1777)", run: cmdChmod, minArgs: 2, maxArgs: -1},
		"chown":         {usage: "OWNER[:GROUP] PATH...", help: "set owner and/or group (:GROUP sets only the group)", run: cmdChown, minArgs: 2, maxArgs: -1},
		"locations":     {usage: "PATH", help: "block locations of a file and which replicas are live", run: cmdLocations, minArgs: 1, maxArgs: 1},
		"cluster":       {usage: "", help: "leader, members, datanodes and space", run: cmdCluster, minArgs: 0, maxArgs: 0},
		"admin":         {usage: "revoke|unrevoke --serial S|--fingerprint F|--identity ROLE:NAME [--reason R] | revoked | safemode get|enter|leave|wait | decommission DN... | recommission DN... | maintenance DN... --until TIME [--maintenance-min-replicas N] | refreshNodes | allowSnapshot DIR... | disallowSnapshot DIR...", help: "superuser: make directories snapshottable or not; put a certificate or identity on the cluster's replicated deny list, lift an entry, or list them; read, enter, leave or wait out the leader's safe mode; decommission datanodes, put them in maintenance, make them normal again, or reread the exclude file", run: cmdAdmin, minArgs: 1, maxArgs: -1},
		"balancer":      {usage: "[-threshold PCT] [-bandwidth BYTES/S] [-max-iterations N]", help: "superuser: move replicas from the fullest to the emptiest datanodes until each is within PCT of the mean utilisation (the leader runs it; resumed on a new leader); exit 0 when balanced", run: cmdBalancer, flags: balancerFlags, minArgs: 0, maxArgs: 0},
		"fsck":          {usage: "[PATH]", help: "check blocks under PATH (default /): missing, under-replicated, corrupt; exit 1 if any missing or corrupt", run: cmdFsck, minArgs: 0, maxArgs: 1},
		"setQuota":      {usage: "N DIR...", help: "set the namespace quota of directories to N names (files and directories, each DIR included); superuser only", run: quotaCmd("setQuota", true, false), minArgs: 2, maxArgs: -1},
		"clrQuota":      {usage: "DIR...", help: "clear the namespace quota of directories; superuser only", run: quotaCmd("clrQuota", false, false), minArgs: 1, maxArgs: -1},
		"setSpaceQuota": {usage: "N DIR...", help: "set the space quota of directories to N bytes times replication (suffixes k, m, g, t, p, e: 10g); superuser only", run: quotaCmd("setSpaceQuota", true, true), minArgs: 2, maxArgs: -1},
		"clrSpaceQuota": {usage: "DIR...", help: "clear the space quota of directories; superuser only", run: quotaCmd("clrSpaceQuota", false, true), minArgs: 1, maxArgs: -1},
		"setfattr":      {usage: "-n NAME [-v VALUE] | -x NAME PATH...", help: `set an extended attribute (user.x, trusted.x: HDFS's namespaces) of paths, or remove it with -x; VALUE "text", 0x hex or 0s base64`, run: cmdSetfattr, flags: setfattrFlags, minArgs: 1, maxArgs: -1},
		"getfattr":      {usage: "[-R] -n NAME | -d [-e text|hex|base64] PATH...", help: "print an extended attribute (-n) or all of them (-d) of paths, as hdfs dfs -getfattr does; -R recursively", run: cmdGetfattr, flags: getfattrFlags, minArgs: 1, maxArgs: -1},
		"touch":         {usage: "[-a] [-m] [-c] [-t yyyyMMdd:HHmmss] PATH...", help: "set the access and modification times to now (or -t); -a only the access time, -m only the modification time; an empty file is created where none is, unless -c", run: cmdTouch, flags: touchFlags, minArgs: 1, maxArgs: -1},
		"truncate":      {usage: "[-w] LENGTH PATH...", help: "cut files to LENGTH bytes; a cut inside a block finishes once block recovery has cut its replicas (-w waits for it)", run: cmdTruncate, flags: boolFlag("w", "wait for block recovery"), minArgs: 2, maxArgs: -1},
		"count":         {usage: "[-q] [-h] PATH...", help: "count directories, files and bytes under paths: DIR_COUNT FILE_COUNT CONTENT_SIZE PATHNAME; -q first QUOTA REM_QUOTA SPACE_QUOTA REM_SPACE_QUOTA; -h human-readable sizes", run: cmdCount, flags: countFlags, minArgs: 1, maxArgs: -1},
		// HDFS snapshots (hsnapshot.go); allowSnapshot and disallowSnapshot are admin subcommands.
		"createSnapshot":     {usage: "DIR [NAME]", help: "take a snapshot of a snapshottable directory (its owner or a superuser), read-only under DIR/.snapshot/NAME; NAME defaults to s<time>", run: cmdCreateSnapshot, minArgs: 1, maxArgs: 2},
		"deleteSnapshot":     {usage: "DIR NAME", help: "delete a snapshot; blocks only it held are freed", run: cmdDeleteSnapshot, minArgs: 2, maxArgs: 2},
		"renameSnapshot":     {usage: "DIR OLD NEW", help: "rename a snapshot", run: cmdRenameSnapshot, minArgs: 3, maxArgs: 3},
		"lsSnapshottableDir": {usage: "", help: "list the snapshottable directories you own (a superuser: all): mode, 0, owner, group, 0, mtime, snapshots, limit, path", run: cmdLsSnapshottableDir, minArgs: 0, maxArgs: 0},
	}
}

func boolFlag(name, usage string) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) { fs.Bool(name, false, usage) }
}

func flagBool(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Value.String() == "true"
}

// usageErr is a usage error: exit 2.
type usageErr struct{ msg string }

func (e usageErr) Error() string { return e.msg }

// pathErr is a failure on one path: "dfs: OP PATH: why".
type pathErr struct {
	op, path string
	err      error
}

func (e *pathErr) Unwrap() error { return e.err }

func (e *pathErr) Error() string {
	if e.path == "" {
		return fmt.Sprintf("%s: %s", e.op, describe(e.err))
	}
	return fmt.Sprintf("%s %s: %s", e.op, e.path, describe(e.err))
}

// describe is the reason part of an error message: the kind for the
// everyday kinds (not found, already exists...), the message otherwise.
func describe(err error) string {
	var e *errs.Error
	switch k := errs.KindOf(err); k {
	case errs.NotFound, errs.Exist, errs.NotEmpty, errs.NotDir, errs.IsDir:
		return k.String()
	case errs.Permission, errs.Unauthenticated:
		// Say why: which role or access the server wanted.
		if errors.As(err, &e) && e.Msg != "" {
			return k.String() + " (" + e.Msg + ")"
		}
		return k.String()
	}
	if errors.As(err, &e) && e.Msg != "" {
		msg := e.Msg
		if e.Err != nil {
			msg += ": " + e.Err.Error()
		}
		return msg
	}
	return err.Error()
}

func topUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: dfs [--namenodes ADDRS] [--user NAME] [--json] [--timeout D] COMMAND [ARGS]")
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].usage)
	}
}

// run is dfs's main; it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	nns := fs.String("namenodes", os.Getenv("BLOCKFS_NAMENODES"), "comma-separated namenode gRPC addresses [$BLOCKFS_NAMENODES]")
	defUser := os.Getenv("BLOCKFS_USER")
	user := fs.String("user", defUser, "user to act as (default: the OS user) [$BLOCKFS_USER]")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	timeout := fs.Duration("timeout", 5*time.Minute, "deadline of the whole command")
	retryFor := fs.Duration("retry-for", 5*time.Second, "how long to keep retrying while no namenode accepts a connection (a wrong --namenodes, a cluster not up yet); 0: until --timeout")
	tlsCA := fs.String("tls-ca", os.Getenv("BLOCKFS_TLS_CA"), "cluster CA (PEM) for mTLS [$BLOCKFS_TLS_CA]")
	tlsCert := fs.String("tls-cert", os.Getenv("BLOCKFS_TLS_CERT"), "your certificate (PEM); its spiffe://<trust-domain>/user/<name> URI SAN names you under mTLS [$BLOCKFS_TLS_CERT]")
	tlsKey := fs.String("tls-key", os.Getenv("BLOCKFS_TLS_KEY"), "your private key (PEM) [$BLOCKFS_TLS_KEY]")
	// The flag package calls Usage itself on -help and on a bad flag;
	// dfs prints its usage once, below.
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			topUsage(stderr)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintln(stderr, "dfs:", err)
		topUsage(stderr)
		return 2
	}
	if fs.NArg() == 0 {
		topUsage(stderr)
		return 2
	}
	name := fs.Arg(0)
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "dfs: unknown command %q\n", name)
		topUsage(stderr)
		return 2
	}
	cfs := flag.NewFlagSet("dfs "+name, flag.ContinueOnError)
	cfs.SetOutput(io.Discard)
	if cmd.flags != nil {
		cmd.flags(cfs)
	}
	cmdUsage := func() {
		fmt.Fprintf(stderr, "usage: dfs %s %s\n  %s\n", name, cmd.usage, cmd.help)
		cfs.SetOutput(stderr)
		cfs.PrintDefaults()
	}
	if err := cfs.Parse(fs.Args()[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cmdUsage()
			return 0
		}
		fmt.Fprintf(stderr, "dfs %s: %v\n", name, err)
		cmdUsage()
		return 2
	}
	rest := cfs.Args()
	if len(rest) < cmd.minArgs || (cmd.maxArgs >= 0 && len(rest) > cmd.maxArgs) {
		fmt.Fprintf(stderr, "dfs %s: wrong number of arguments\n", name)
		cmdUsage()
		return 2
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "dfs: --timeout must be positive")
		return 2
	}
	if *retryFor < 0 {
		fmt.Fprintln(stderr, "dfs: --retry-for must not be negative")
		return 2
	}
	addrs := cliflag.SplitList(*nns)
	if len(addrs) == 0 {
		fmt.Fprintln(stderr, "dfs: no namenodes: pass --namenodes or set BLOCKFS_NAMENODES")
		return 2
	}
	cfg := client.DefaultConfig(addrs...)
	if *user != "" {
		cfg.User = *user
	}
	cfg.UnreachableRetry, cfg.OnRetry = *retryFor, retryNotice(stderr)
	tlsOpts, err := cliflag.ClientTLS(*tlsCA, *tlsCert, *tlsKey)
	if err != nil {
		fmt.Fprintln(stderr, "dfs:", err)
		return 2
	}
	cfg.DialOptions = append(cfg.DialOptions, tlsOpts...)
	cl, err := client.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "dfs:", err)
		return 2
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e := &env{ctx: cctx, cl: cl, json: *asJSON, stdin: stdin, stdout: stdout, stderr: stderr, progress: cliflag.IsTerminal(stderr)}
	err = cmd.run(e, cfs, rest)
	var ue usageErr
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "dfs %s: %s\n", name, ue.msg)
		cmdUsage()
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "dfs:", err)
		e.hint(err)
		return 1
	case e.failed:
		return 1
	}
	return 0
}

// retryNotice tells stderr what a call is retrying: at its 1st, 2nd,
// 4th, 8th... retry, so that a long wait says so without a line a second.
func retryNotice(stderr io.Writer) func(op, addr string, attempt int, err error) {
	var mu sync.Mutex // calls retry concurrently (a writer, its lease renewal)
	return func(op, addr string, attempt int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if attempt&(attempt-1) == 0 {
			fmt.Fprintf(stderr, "dfs: %s at %s failed (%s); retrying (attempt %d)\n", op, addr, describe(err), attempt)
		}
	}
}

// fail reports one failed path and goes on (like rm a b c with a missing).
func (e *env) fail(err error) {
	fmt.Fprintln(e.stderr, "dfs:", err)
	e.failed = true
	e.hint(err)
}

// hint says, once, what to check when no namenode could be reached.
func (e *env) hint(err error) {
	if !e.hinted && client.IsUnreachable(err) {
		e.hinted = true
		fmt.Fprintln(e.stderr, "dfs: check --namenodes (or $BLOCKFS_NAMENODES); --retry-for waits longer for a cluster that is starting")
	}
}
