package hdfsdoor

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// peerModule is the HDFS client whose own test suite runs against
// blockfs; it is in go.mod, so the module cache has its source.
const peerModule = "github.com/colinmarc/hdfs/v2"

// suiteCluster starts what the peer's suite expects: three namenodes with
// the HDFS door, datanodes with theirs, the OS user as superuser; then
// writes the suite's core-site.xml and its fixtures (.github/scripts/
// fixtures.sh) with blockfs's own client. It returns a writable copy of
// the module and the configuration directory.
func suiteCluster(t *testing.T) (c *localcluster.Cluster, mod, conf string) {
	t.Helper()
	src, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", peerModule).Output()
	if err != nil || len(bytes.TrimSpace(src)) == 0 {
		t.Skipf("the %s module source is not available: %v", peerModule, err)
	}
	mod = filepath.Join(t.TempDir(), "hdfs")
	if err := os.CopyFS(mod, os.DirFS(string(bytes.TrimSpace(src)))); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(mod, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			mode := os.FileMode(0o644)
			if d.IsDir() || strings.HasSuffix(p, ".sh") || strings.HasSuffix(p, ".bats") {
				mode = 0o755
			}
			os.Chmod(p, mode)
		}
		return nil
	})
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err = localcluster.Start(ctx, localcluster.Config{
		Dir: t.TempDir(), Datanodes: 3, HDFSData: true,
		Namenode: func(_ int, nc *namenode.Config) {
			nc.HDFSRPC.Addr = "127.0.0.1:0"
			nc.Namespace.Superuser = u.Username
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	conf = t.TempDir()
	if err := os.WriteFile(filepath.Join(conf, "core-site.xml"), coreSite(c.HDFSRPCAddrs()), 0o644); err != nil {
		t.Fatal(err)
	}
	cl, err := c.ClientAs(u.Username)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fixtures(t, ctx, cl, mod)
	return c, mod, conf
}

// coreSite names the namenodes as one HA nameservice, as an HDFS
// client's configuration does.
func coreSite(addrs []string) []byte {
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	prop := func(k, v string) { fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", k, v) }
	prop("fs.defaultFS", "hdfs://blockfs")
	prop("dfs.nameservices", "blockfs")
	var ids []string
	for i, a := range addrs {
		id := fmt.Sprintf("nn%d", i+1)
		ids = append(ids, id)
		prop("dfs.namenode.rpc-address.blockfs."+id, a)
	}
	prop("dfs.ha.namenodes.blockfs", strings.Join(ids, ","))
	b.WriteString("</configuration>\n")
	return b.Bytes()
}

// fixtures is the suite's fixtures.sh, done with blockfs's client.
func fixtures(t *testing.T, ctx context.Context, cl *client.Client, mod string) {
	t.Helper()
	if err := cl.Mkdirs(ctx, "/_test", 0o777, true); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetPermission(ctx, "/_test", 0o777); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name      string
		blockSize uint64
	}{{"foo.txt", 0}, {"mobydick.txt", 1 << 20}} {
		data, err := os.ReadFile(filepath.Join(mod, "testdata", f.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.WriteFile(ctx, "/_test/"+f.name, data, client.CreateOptions{Perm: 0o644, BlockSize: f.blockSize}); err != nil {
			t.Fatal(err)
		}
	}
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// TestPeerSuite runs colinmarc/hdfs's own Go tests (the module root's
// package, 126 tests) against blockfs through its HDFS doors. A test that
// needs Kerberos skips itself (no ccache); every other must pass.
func TestPeerSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the peer's suite takes minutes")
	}
	_, mod, conf := suiteCluster(t)
	cmd := exec.Command("go", "test", "-count=1", "-timeout", "10m", "-v", ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "HADOOP_CONF_DIR="+conf, "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	passed := strings.Count(string(out), "--- PASS")
	skipped := strings.Count(string(out), "--- SKIP")
	fails := failLine.FindAllStringSubmatch(string(out), -1)
	t.Logf("peer suite: %d passed, %d skipped, %d failed", passed, skipped, len(fails))
	if err != nil || len(fails) > 0 {
		os.WriteFile(filepath.Join(os.TempDir(), "blockfs-peer-suite.log"), out, 0o644)
		var names []string
		for _, f := range fails {
			names = append(names, f[1])
		}
		t.Fatalf("peer suite failed (%v): %s\nfull output in %s\n%s", err, strings.Join(names, " "),
			filepath.Join(os.TempDir(), "blockfs-peer-suite.log"), tail(out, 4000))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// hadoopShim provides the two `hadoop fs` commands the peer's bats files
// call to make their expectations (-checksum, -cp), done with blockfs's
// own dfs: `dfs checksum -hdfs` computes HDFS's MD5-of-MD5-of-CRC32C from
// the bytes, independently of the door that the HDFS client's checksum
// command asks.
const hadoopShim = `#!/bin/bash
[ "$1" = fs ] || { echo "hadoop shim: only 'hadoop fs' is provided" >&2; exit 2; }
shift
strip() { echo "$1" | sed -E 's#^hdfs://[^/]*##'; }
case "$1" in
-checksum) "$DFS" checksum -hdfs "$(strip "$2")" ;;
-cp) tmp="$(mktemp -d)/f"; "$DFS" get "$(strip "$2")" "$tmp" && "$DFS" put "$tmp" "$(strip "$3")"; rc=$?; rm -rf "$(dirname "$tmp")"; exit $rc ;;
*) echo "hadoop shim: hadoop fs $1 is not provided" >&2; exit 2 ;;
esac
`

// TestPeerBats runs the peer's command-line tests (cmd/hdfs/test/*.bats,
// with Debian's bats) against blockfs, with the peer's `hdfs` command
// built from the module.
func TestPeerBats(t *testing.T) {
	if testing.Short() {
		t.Skip("the peer's bats files take minutes")
	}
	bats, err := exec.LookPath("bats")
	if err != nil {
		t.Skip("bats is not installed (Debian: apt-get install bats; .ci/run installs it)")
	}
	c, mod, conf := suiteCluster(t)
	bin := t.TempDir()
	build := func(dir, out, pkg string) {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	build(mod, filepath.Join(mod, "hdfs"), "./cmd/hdfs")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dfs := filepath.Join(bin, "dfs")
	build(root, dfs, "./cmd/dfs")
	if err := os.WriteFile(filepath.Join(bin, "hadoop"), []byte(hadoopShim), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bats, "cmd/hdfs/test")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "HADOOP_CONF_DIR="+conf, "HADOOP_NAMENODE="+strings.Join(c.HDFSRPCAddrs(), ","),
		"HADOOP_FS="+filepath.Join(bin, "hadoop")+" fs", "DFS="+dfs,
		"BLOCKFS_NAMENODES="+strings.Join(c.NamenodeAddrs(), ","), "BATS_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	oks := regexp.MustCompile(`(?m)^ok `).FindAll(out, -1)
	bad := regexp.MustCompile(`(?m)^not ok .*$`).FindAll(out, -1)
	skips := regexp.MustCompile(`(?m)^ok .*# skip`).FindAll(out, -1)
	t.Logf("peer bats: %d passed (%d of them skipped), %d failed", len(oks), len(skips), len(bad))
	if err != nil || len(bad) > 0 {
		t.Fatalf("peer bats failed (%v):\n%s", err, tail(out, 6000))
	}
}
