package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/internal/testutil/promsum"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/prometheus/client_golang/prometheus"
)

const testBlock = 64 << 10

var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	lc, err := localcluster.Start(ctx, localcluster.Config{Datanodes: 5, Namenode: func(_ int, c *namenode.Config) { c.Namespace.DefaultBlockSize = testBlock }})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start cluster:", err)
		os.Exit(1)
	}
	cluster = lc
	code := m.Run()
	lc.Close()
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// dfs runs the command line against the test cluster as root.
func dfs(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	if cluster == nil {
		t.Skip("no cluster in -short mode")
	}
	full := append([]string{"--namenodes", strings.Join(cluster.NamenodeAddrs(), ","), "--user", "root", "--timeout", "30s"}, args...)
	var out, errb bytes.Buffer
	code := run(context.Background(), full, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func must(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

func TestPutGetRoundTripMultiBlock(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 5*testBlock+12345) // 6 blocks, the last one partial
	rand.Read(data)
	local := filepath.Join(dir, "in.bin")
	os.WriteFile(local, data, 0o644)
	must(t, dfs(t, "", "mkdir", "-p", "/rt/a"))
	must(t, dfs(t, "", "put", local, "/rt/a/file.bin"))
	back := filepath.Join(dir, "out.bin")
	must(t, dfs(t, "", "get", "/rt/a/file.bin", back))
	got, err := os.ReadFile(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("round trip differs: %d bytes back, want %d", len(got), len(data))
	}
	r := must(t, dfs(t, "", "cat", "/rt/a/file.bin"))
	if r.stdout != string(data) {
		t.Error("cat differs from what was put")
	}
	// put into a directory keeps the local name; put over a file needs -f.
	must(t, dfs(t, "", "put", local, "/rt/a"))
	must(t, dfs(t, "", "stat", "/rt/a/in.bin"))
	if r := dfs(t, "", "put", local, "/rt/a/file.bin"); r.code != 1 || !strings.Contains(r.stderr, "dfs: put /rt/a/file.bin: already exists") {
		t.Errorf("put over existing: %+v", r)
	}
	must(t, dfs(t, "", "put", "-f", "-", "/rt/a/file.bin"))
	// stdin put (empty) replaced it
	if r := must(t, dfs(t, "hello\n", "put", "-f", "-", "/rt/a/file.bin")); r.stderr != "" {
		t.Error(r.stderr)
	}
	if r := must(t, dfs(t, "", "cat", "/rt/a/file.bin")); r.stdout != "hello\n" {
		t.Errorf("cat after stdin put: %q", r.stdout)
	}
	// get to stdout
	if r := must(t, dfs(t, "", "get", "/rt/a/file.bin", "-")); r.stdout != "hello\n" {
		t.Errorf("get -: %q", r.stdout)
	}
}

func TestLsMkdirStatMvRm(t *testing.T) {
	must(t, dfs(t, "", "mkdir", "-p", "/ls/x/y"))
	must(t, dfs(t, "abc", "put", "-", "/ls/x/f.txt"))
	r := must(t, dfs(t, "", "ls", "/ls/x"))
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "-rw") || !strings.HasSuffix(lines[0], "/ls/x/f.txt") || !strings.HasPrefix(lines[1], "drwx") {
		t.Errorf("ls:\n%s", r.stdout)
	}
	r = must(t, dfs(t, "", "ls", "-R", "/ls"))
	for _, want := range []string{"/ls/x\n", "/ls/x/y\n", "/ls/x/f.txt\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ls -R lacks %q:\n%s", want, r.stdout)
		}
	}
	r = must(t, dfs(t, "", "--json", "ls", "/ls/x"))
	var entries []fileJSON
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil || len(entries) != 2 || entries[0].Length != 3 || entries[0].Type != "file" {
		t.Errorf("ls --json: %v %s", err, r.stdout)
	}
	r = must(t, dfs(t, "", "stat", "/ls/x/f.txt"))
	for _, want := range []string{"type:", "file", "length:", "3", "owner:", "root"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stat lacks %q:\n%s", want, r.stdout)
		}
	}
	must(t, dfs(t, "", "mv", "/ls/x/f.txt", "/ls/x/g.txt"))
	if r := dfs(t, "", "stat", "/ls/x/f.txt"); r.code != 1 {
		t.Errorf("old name still there: %+v", r)
	}
	if r := dfs(t, "", "rm", "/ls/x"); r.code != 1 || !strings.Contains(r.stderr, "rm /ls/x: is a directory") {
		t.Errorf("rm dir without -r: %+v", r)
	}
	must(t, dfs(t, "", "rm", "/ls/x/g.txt"))
	must(t, dfs(t, "", "rm", "-r", "/ls"))
	if r := dfs(t, "", "ls", "/ls"); r.code != 1 || !strings.Contains(r.stderr, "dfs: ls /ls: not found") {
		t.Errorf("ls after rm -r: %+v", r)
	}
	if r := dfs(t, "", "mkdir", "/nope/deeper"); r.code != 1 || !strings.Contains(r.stderr, "mkdir /nope/deeper") {
		t.Errorf("mkdir without -p: %+v", r)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cat", "/x"}, 1, "dfs: cat /x: not found"},
		{[]string{"get", "/missing", "/tmp/whatever"}, 1, "dfs: get /missing: not found"},
		{[]string{"stat", "/missing"}, 1, "dfs: stat /missing: not found"},
		{[]string{"rm", "/missing"}, 1, "dfs: rm /missing: not found"},
		{[]string{"mv", "/missing", "/b"}, 1, "dfs: mv /missing: not found"},
		{[]string{"locations", "/missing"}, 1, "dfs: locations /missing: not found"},
		{[]string{"fsck", "/missing"}, 1, "dfs: fsck /missing: not found"},
		{[]string{"put", "/no/such/local/file", "/x"}, 1, "dfs: put /no/such/local/file: not found"},
		{[]string{"cat", "relative"}, 1, "dfs: cat relative: path must be absolute"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{}, 2, "usage: dfs"},
		{[]string{"mv", "/a"}, 2, "dfs mv: wrong number of arguments"},
		{[]string{"cat"}, 2, "dfs cat: wrong number of arguments"},
		{[]string{"ls", "-Z", "/"}, 2, "flag provided but not defined: -Z"},
		{[]string{"chmod", "9z9", "/"}, 2, `mode "9z9": want octal`},
		{[]string{"chmod", "7777", "/"}, 2, `mode "7777"`},
		{[]string{"chown", ":", "/"}, 2, "want OWNER, OWNER:GROUP or :GROUP"},
		{[]string{"--bogus", "ls"}, 2, "flag provided but not defined"},
	} {
		r := dfs(t, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("dfs %v: exit %d stderr %q; want exit %d with %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	// No namenodes at all is a usage error.
	t.Setenv("BLOCKFS_NAMENODES", "")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"ls", "/"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "no namenodes") {
		t.Errorf("no namenodes: %d %q", code, errb.String())
	}
}

func TestChmodChown(t *testing.T) {
	must(t, dfs(t, "x", "put", "-", "/perm.txt"))
	r := dfs(t, "", "chmod", "600", "/perm.txt")
	if r.code != 0 && (strings.Contains(strings.ToLower(r.stderr), strings.ToLower(codes.Unimplemented.String())) || strings.Contains(r.stderr, "not implemented")) {
		t.Skipf("the namenode does not serve SetPermission yet: %s", r.stderr)
	}
	must(t, r)
	must(t, dfs(t, "", "chown", "alice:staff", "/perm.txt"))
	r = must(t, dfs(t, "", "--json", "stat", "/perm.txt"))
	var st []fileJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st) != 1 {
		t.Fatal(err, r.stdout)
	}
	if st[0].Mode != "0600" || st[0].Perm != "-rw-------" || st[0].Owner != "alice" || st[0].Group != "staff" {
		t.Errorf("after chmod/chown: %+v", st[0])
	}
	must(t, dfs(t, "", "chown", ":wheel", "/perm.txt"))
	r = must(t, dfs(t, "", "--json", "stat", "/perm.txt"))
	json.Unmarshal([]byte(r.stdout), &st)
	if st[0].Owner != "alice" || st[0].Group != "wheel" {
		t.Errorf("after chown :wheel: %+v", st[0])
	}
	if r := dfs(t, "", "chmod", "644", "/missing"); r.code != 1 || !strings.Contains(r.stderr, "dfs: chmod /missing: not found") {
		t.Errorf("chmod missing: %+v", r)
	}
	// A non-owner may not chmod.
	full := []string{"--namenodes", strings.Join(cluster.NamenodeAddrs(), ","), "--user", "mallory", "chmod", "777", "/perm.txt"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), full, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(errb.String(), "chmod /perm.txt: permission denied") {
		t.Errorf("chmod as mallory: %d %q", code, errb.String())
	}
}

func TestLocationsClusterFsck(t *testing.T) {
	data := strings.Repeat("z", 2*testBlock+10) // 3 blocks
	must(t, dfs(t, data, "put", "-replication", "2", "-", "/loc.bin"))
	// Complete does not wait for the datanodes' incremental reports: the
	// replicas may still be reporting in.
	var r result
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r = must(t, dfs(t, "", "locations", "/loc.bin"))
		if !strings.Contains(r.stdout, "MISSING") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(r.stdout, "3 blocks, replication 2") || !strings.Contains(r.stdout, "(live)") {
		t.Errorf("locations:\n%s", r.stdout)
	}
	r = must(t, dfs(t, "", "--json", "locations", "/loc.bin"))
	var lj locationsJSON
	if err := json.Unmarshal([]byte(r.stdout), &lj); err != nil || len(lj.Blocks) != 3 || lj.Length != uint64(len(data)) {
		t.Fatalf("locations --json: %v %s", err, r.stdout)
	}
	r = must(t, dfs(t, "", "cluster"))
	for _, want := range []string{"leader:", "MEMBER", "nn1", "DATANODE", "5 live, 0 dead", "space (live):"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("cluster lacks %q:\n%s", want, r.stdout)
		}
	}
	r = must(t, dfs(t, "", "--json", "cluster"))
	var cj clusterJSON
	if err := json.Unmarshal([]byte(r.stdout), &cj); err != nil || len(cj.Members) != 3 || cj.LiveDNs != 5 || cj.LeaderID == "" {
		t.Errorf("cluster --json: %v %+v", err, cj)
	}

	// Healthy tree. Replicas may still be reporting in: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = dfs(t, "", "fsck", "/")
		if r.code == 0 && strings.Contains(r.stdout, "HEALTHY") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(t, r)
	r = must(t, dfs(t, "", "--json", "fsck", "/loc.bin"))
	var fj fsckJSON
	if err := json.Unmarshal([]byte(r.stdout), &fj); err != nil || !fj.Healthy || fj.Report.Blocks != 3 || fj.Report.Files != 1 {
		t.Errorf("fsck --json: %v %s", err, r.stdout)
	}
}

// TestFsckMissingBlocks writes a file with replication 1 on its own
// cluster, stops every datanode holding its blocks, and expects fsck to
// report them missing and exit 1.
func TestFsckMissingBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 3, Namenode: func(_ int, c *namenode.Config) { c.Namespace.DefaultBlockSize = testBlock }})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cl, err := lc.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.WriteFile(ctx, "/one.bin", make([]byte, testBlock+1), client.CreateOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	args := func(a ...string) []string {
		return append([]string{"--namenodes", strings.Join(lc.NamenodeAddrs(), ","), "--user", "root"}, a...)
	}
	// Wait for the replicas to be reported, then stop the datanodes.
	for {
		locs, err := cl.GetBlockLocations(ctx, "/one.bin", 0, 0)
		if err == nil && len(locs.Blocks) == 2 && len(locs.Blocks[0].Locations) == 1 && len(locs.Blocks[1].Locations) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("replicas never reported")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range 3 {
		lc.StopDatanode(i)
	}
	var out, errb bytes.Buffer
	code := 0
	for {
		out.Reset()
		errb.Reset()
		code = run(ctx, args("fsck", "/"), strings.NewReader(""), &out, &errb)
		if (code == 1 && strings.Contains(errb.String(), "2 missing")) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // until the namenode declares every holder dead
	}
	if code != 1 || !strings.Contains(out.String(), "MISSING") || !strings.Contains(errb.String(), "dfs: fsck /: 2 missing") {
		t.Errorf("fsck with dead datanodes: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	run(ctx, args("locations", "/one.bin"), strings.NewReader(""), &out, &errb)
	if !strings.Contains(out.String(), "MISSING") {
		t.Errorf("locations with dead datanodes:\n%s", out.String())
	}

	// In safe mode the same blocks may only not be reported yet: fsck
	// says so and does not fail. The superuser holds it by hand; writes
	// wait (the client retries) and leave works.
	dfsAs := func(user string, a ...string) result {
		var o, e bytes.Buffer
		full := append([]string{"--namenodes", strings.Join(lc.NamenodeAddrs(), ","), "--user", user, "--timeout", "3s"}, a...)
		return result{run(ctx, full, strings.NewReader(""), &o, &e), o.String(), e.String()}
	}
	if r := dfsAs("alice", "admin", "safemode", "enter"); r.code == 0 || !strings.Contains(r.stderr, "permission denied") {
		t.Errorf("alice entering safe mode: exit %d %s", r.code, r.stderr)
	}
	if r := dfsAs("root", "admin", "safemode", "enter"); r.code != 0 || !strings.Contains(r.stdout, "Safe mode is ON. It was turned on manually") {
		t.Fatalf("safemode enter: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := dfsAs("root", "fsck", "/")
	if r.code != 0 || !strings.Contains(r.stdout, "NOT REPORTED YET") || !strings.Contains(r.stdout, "UNKNOWN: the namenode is in safe mode") {
		t.Errorf("fsck in safe mode: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := dfsAs("root", "mkdir", "/during"); r.code == 0 || !strings.Contains(r.stderr, "SafeModeException") {
		t.Errorf("mkdir in safe mode: exit %d %s", r.code, r.stderr)
	}
	if r := dfsAs("root", "admin", "safemode", "leave"); r.code != 0 || !strings.Contains(r.stdout, "Safe mode is OFF.") {
		t.Errorf("safemode leave: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := dfsAs("root", "admin", "safemode", "wait"); r.code != 0 {
		t.Errorf("safemode wait after leave: exit %d %s", r.code, r.stderr)
	}
	if r := dfsAs("root", "mkdir", "/after"); r.code != 0 {
		t.Errorf("mkdir after safe mode: exit %d %s", r.code, r.stderr)
	}
}

// TestRmTrash: with a trash interval, dfs rm moves into the caller's
// trash and says where, -skipTrash deletes for good, and so does rm of a
// path in the trash; dfs expunge checkpoints what is there.
func TestRmTrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 1, Namenode: func(_ int, c *namenode.Config) {
		c.Namespace.DefaultReplication = 1
		c.TrashInterval = time.Hour
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	do := func(a ...string) result {
		var o, e bytes.Buffer
		full := append([]string{"--namenodes", strings.Join(lc.NamenodeAddrs(), ","), "--user", "root"}, a...)
		return result{run(ctx, full, strings.NewReader(""), &o, &e), o.String(), e.String()}
	}
	must(t, do("put", "-", "/a"))
	must(t, do("put", "-", "/b"))
	if r := must(t, do("rm", "/a")); !strings.Contains(r.stdout, "Moved: '/a' to trash at: /user/root/.Trash/Current/a") {
		t.Errorf("rm /a: %s", r.stdout)
	}
	must(t, do("stat", "/user/root/.Trash/Current/a"))
	if r := must(t, do("rm", "-skipTrash", "/b")); strings.Contains(r.stdout, "Moved") {
		t.Errorf("rm -skipTrash moved: %s", r.stdout)
	}
	if r := do("stat", "/user/root/.Trash/Current/b"); r.code == 0 {
		t.Error("rm -skipTrash put /b in the trash")
	}
	if r := must(t, do("expunge")); !strings.Contains(r.stdout, "Deleted 0 expired") {
		t.Errorf("expunge: %s", r.stdout)
	}
	if r := do("stat", "/user/root/.Trash/Current"); r.code == 0 {
		t.Error("expunge left Current in place: no checkpoint")
	}
	r := must(t, do("ls", "/user/root/.Trash"))
	ckpt := ""
	for _, f := range strings.Fields(r.stdout) {
		if strings.HasPrefix(f, "/user/root/.Trash/") {
			ckpt = f
		}
	}
	if ckpt == "" {
		t.Fatalf("no checkpoint listed:\n%s", r.stdout)
	}
	if r := must(t, do("rm", "-r", ckpt)); strings.Contains(r.stdout, "Moved") {
		t.Errorf("rm in the trash moved again: %s", r.stdout)
	}
	if r := do("stat", ckpt); r.code == 0 {
		t.Error("rm in the trash kept the checkpoint")
	}
}

// TestChecksum: dfs checksum prints PATH, COMPOSITE-CRC32C and the CRC32C
// of exactly the bytes written (composed from the block CRCs, the block
// size does not matter), as a table or JSON; a directory, a missing path
// and an open file are errors naming the path, and the other paths still
// print.
func TestChecksum(t *testing.T) {
	cases := []struct {
		name string
		size int
		bs   string
	}{
		{"empty", 0, ""},
		{"one byte", 1, ""},
		{"six blocks, last partial", 5*testBlock + 12345, ""},
		{"small blocks", 3*testBlock + 7, "8192"},
	}
	var paths []string
	want := map[string]string{}
	for i, c := range cases {
		data := make([]byte, c.size)
		rand.Read(data)
		p := fmt.Sprintf("/sum/f%d", i)
		args := []string{"put"}
		if c.bs != "" {
			args = append(args, "-blocksize", c.bs)
		}
		must(t, dfs(t, "", "mkdir", "-p", "/sum"))
		must(t, dfs(t, string(data), append(args, "-", p)...))
		paths = append(paths, p)
		want[p] = fmt.Sprintf("%08x", crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	}
	r := must(t, dfs(t, "", append([]string{"checksum"}, paths...)...))
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(paths) {
		t.Fatalf("checksum printed %d lines for %d paths:\n%s", len(lines), len(paths), r.stdout)
	}
	for i, line := range lines {
		if w := paths[i] + "\tCOMPOSITE-CRC32C\t" + want[paths[i]]; line != w {
			t.Errorf("line %d = %q, want %q", i, line, w)
		}
	}
	r = must(t, dfs(t, "", "--json", "checksum", paths[2]))
	var js []struct {
		Path, Algorithm, Checksum string
		Length                    uint64
	}
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil || len(js) != 1 ||
		js[0].Path != paths[2] || js[0].Algorithm != "COMPOSITE-CRC32C" || js[0].Checksum != want[paths[2]] || js[0].Length != 5*testBlock+12345 {
		t.Fatalf("checksum --json: %v %s", err, r.stdout)
	}

	// Errors: each names its path; the good path still prints.
	cl, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	open, err := cl.Create(context.Background(), "/sum/open", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	r = dfs(t, "", "checksum", "/sum", "/sum/nope", "/sum/open", paths[1])
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{"checksum /sum: is a directory", "checksum /sum/nope: not found", "checksum /sum/open: file is under construction"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if r.stdout != paths[1]+"\tCOMPOSITE-CRC32C\t"+want[paths[1]]+"\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

// TestPutRefusedBlockSize: a block size the namenode does not allow fails
// put at once with the namenode's reason (no client panic, no retry loop)
// and leaves no file behind.
func TestPutRefusedBlockSize(t *testing.T) {
	cases := []struct{ name, bs, msg string }{
		{"2^64-1", "18446744073709551615", "block size 18446744073709551615 is above the maximum"},
		{"1 TiB", "1099511627776", "block size 1099511627776 is above the maximum"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := fmt.Sprintf("/badbs%d", i)
			r := dfs(t, "some bytes", "put", "-blocksize", c.bs, "-", p)
			if r.code != 1 || !strings.Contains(r.stderr, "put "+p+": ") || !strings.Contains(r.stderr, c.msg) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, c.msg)
			}
			if r := dfs(t, "", "stat", p); r.code != 1 || !strings.Contains(r.stderr, "not found") {
				t.Fatalf("%s exists after the refused put: %s%s", p, r.stdout, r.stderr)
			}
		})
	}
}

// TestPutSmallFileInOneEntry: a local file of one small block is put with
// PutFile (one Raft entry: no Create, no Complete), reads back whole, and
// keeps put's rules: -f to replace, the same message without it.
func TestPutSmallFileInOneEntry(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "small")
	data := make([]byte, 3000)
	rand.Read(data)
	os.WriteFile(local, data, 0o644)
	calls := func(method string) uint64 {
		var gs []prometheus.Gatherer
		for _, nn := range cluster.Namenodes() {
			gs = append(gs, nn.Registry())
		}
		return uint64(promsum.Sum(t, gs, "blockfs_namenode_rpc_duration_seconds", "method", func(v string) bool { return strings.HasSuffix(v, "/"+method) }))
	}
	puts, creates := calls("PutFile"), calls("Create")
	must(t, dfs(t, "", "put", local, "/small"))
	if got := calls("PutFile") - puts; got != 1 {
		t.Fatalf("%d PutFile calls for a small put, want 1", got)
	}
	if got := calls("Create") - creates; got != 0 {
		t.Fatalf("%d Create calls for a small put, want none", got)
	}
	if r := must(t, dfs(t, "", "cat", "/small")); r.stdout != string(data) {
		t.Fatal("cat differs from what was put")
	}
	if r := dfs(t, "", "put", local, "/small"); r.code != 1 || !strings.Contains(r.stderr, "dfs: put /small: already exists") {
		t.Errorf("put over existing: %+v", r)
	}
	must(t, dfs(t, "", "put", "-f", local, "/small"))
}
