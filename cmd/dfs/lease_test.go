package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
)

// TestRecoverLease: recover-lease closes a file its writer abandoned,
// keeping the hflushed bytes, and refuses a file that is not open.
func TestRecoverLease(t *testing.T) {
	if cluster == nil {
		t.Skip("no cluster in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w, err := cl.Create(ctx, "/abandoned", client.CreateOptions{Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("hflushed bytes")); err != nil {
		t.Fatal(err)
	}
	if err := w.Hflush(); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	r := must(t, dfs(t, "", "recover-lease", "/abandoned"))
	if !strings.Contains(r.stdout, "closed") {
		t.Fatalf("recover-lease printed %q", r.stdout)
	}
	if got := must(t, dfs(t, "", "cat", "/abandoned")).stdout; got != "hflushed bytes" {
		t.Fatalf("after recovery: %q", got)
	}
	r = dfs(t, "", "recover-lease", "/abandoned")
	if r.code == 0 || !strings.Contains(r.stderr, "not under construction") {
		t.Fatalf("recover-lease of a closed file: code %d, %q", r.code, r.stderr)
	}
}
