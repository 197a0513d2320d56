package webhdfs_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/client"
)

// TestCurlExamples runs the curl examples of docs/OPERATIONS.md
// ("WebHDFS") against a cluster: every command line in the block after
// the webhdfs-curl marker, in order, in one directory, with NN set to the
// namenode's HTTP address; a "# text" line after a command is output the
// command must print.
func TestCurlExamples(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("SKIPPED LOUDLY: no curl to run the documented examples with")
	}
	doc, err := os.ReadFile("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- webhdfs-curl")
	if !ok {
		t.Fatal("docs/OPERATIONS.md has no webhdfs-curl block")
	}
	_, block, _ = strings.Cut(block, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	e := startEnv(t, 1, false, "root")
	cl := e.client()
	ctx := ctxT(t)
	if err := cl.Mkdirs(ctx, "/tmp", 0o1777, true); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetPermission(ctx, "/tmp", 0o1777); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := append(os.Environ(), "NN="+strings.TrimPrefix(e.nn, "http://"), "PATH="+strings.TrimSuffix(curl, "/curl")+":"+os.Getenv("PATH"))
	lines := strings.Split(strings.TrimSpace(block), "\n")
	ran := 0
	var last []byte
	var lastCmd string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "NN="):
		case strings.HasPrefix(l, "# "):
			want := strings.TrimPrefix(l, "# ")
			if !bytes.Contains(last, []byte(want)) {
				t.Errorf("%s\nprinted %q, want it to contain %q", lastCmd, last, want)
			}
		default:
			cmd := exec.CommandContext(ctx, "sh", "-c", l)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", l, err, out)
			}
			last, lastCmd = out, l
			ran++
		}
	}
	if ran < 10 {
		t.Fatalf("ran only %d commands from the documented block", ran)
	}
	if _, err := cl.Stat(ctx, "/tmp/demo"); client.Code(err) == 0 {
		t.Error("the examples' last DELETE left /tmp/demo")
	}
}
