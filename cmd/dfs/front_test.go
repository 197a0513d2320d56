package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRefusedAddress: dfs pointed at an address nothing listens on says
// what it is retrying and gives up after --retry-for with an error naming
// the address and the refusal, not at its --timeout.
func TestRefusedAddress(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, []string{"--namenodes", addr, "--user", "root", "--timeout", "1m", "--retry-for", "200ms", "ls", "/"}, strings.NewReader(""), &out, &errb)
	stderr := errb.String()
	if code != 1 || ctx.Err() != nil {
		t.Fatalf("exit %d (context %v), stderr %q", code, ctx.Err(), stderr)
	}
	for _, want := range []string{
		"dfs: GetFileInfo at " + addr + " failed (", "retrying (attempt 1)", // said as it retried
		"could not connect to any namenode (" + addr + ") for 200ms", "connection refused", "check --namenodes",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "gave up retrying") {
		t.Errorf("dfs waited out its --timeout:\n%s", stderr)
	}
	// Retries are told at attempts 1, 2, 4, 8...: never two lines for one.
	lines := strings.Count(stderr, "retrying (attempt ")
	if lines == 0 || lines != strings.Count(stderr, "dfs: GetFileInfo at ") {
		t.Errorf("%d retry lines:\n%s", lines, stderr)
	}
	errb.Reset()
	if code := run(ctx, []string{"--namenodes", addr, "--retry-for", "-1s", "ls", "/"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "--retry-for") {
		t.Errorf("negative --retry-for: exit %d %q", code, errb.String())
	}
}

// TestHelpOnce: --help prints dfs's usage once, and so does a bad flag.
func TestHelpOnce(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{{[]string{"--help"}, 0}, {[]string{"-h"}, 0}, {[]string{"--bogus"}, 2}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if n := strings.Count(errb.String(), "usage: dfs"); code != c.code || n != 1 {
			t.Errorf("dfs %v: exit %d, usage printed %d times:\n%s", c.args, code, n, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(errb.String(), "-retry-for") {
		t.Errorf("--help lacks the flags: %q", errb.String())
	}
}

// TestPutZeroAndGetMissingDir: put refuses -replication 0 and
// -blocksize 0, naming the value, before it creates anything (left out,
// the namenode's defaults apply); get into a local directory that does not
// exist says it is the local directory.
func TestPutZeroAndGetMissingDir(t *testing.T) {
	for _, c := range []struct{ flag, want string }{
		{"-replication", "-replication 0: want 1 or more"},
		{"-blocksize", "-blocksize 0: want 1 or more"},
	} {
		r := dfs(t, "bytes", "put", c.flag, "0", "-", "/zero"+c.flag)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("put %s 0: exit %d %q, want 2 and %q", c.flag, r.code, r.stderr, c.want)
		}
		if r := dfs(t, "", "stat", "/zero"+c.flag); r.code != 1 || !strings.Contains(r.stderr, "not found") {
			t.Errorf("/zero%s exists after the refused put: %s%s", c.flag, r.stdout, r.stderr)
		}
	}
	must(t, dfs(t, "bytes", "put", "-", "/defaults"))
	must(t, dfs(t, "bytes", "put", "-replication", "1", "-blocksize", "65536", "-", "/explicit"))
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing-dir", "out")
	r := dfs(t, "", "get", "/defaults", missing)
	want := "dfs: get " + missing + ": local directory " + filepath.Join(dir, "missing-dir") + " does not exist"
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("get into a missing directory: exit %d %q, want %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing-dir")); err == nil {
		t.Errorf("get made the missing directory")
	}
}
