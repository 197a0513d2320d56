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
