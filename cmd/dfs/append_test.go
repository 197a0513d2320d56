package main

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAppendToFile: appendToFile creates a missing file, appends local
// files in order and stdin, and refuses what HDFS refuses.
func TestAppendToFile(t *testing.T) {
	dir := t.TempDir()
	a, b := make([]byte, testBlock+100), make([]byte, 777)
	rand.Read(a)
	rand.Read(b)
	la, lb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(la, a, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lb, b, 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, dfs(t, "", "mkdir", "-p", "/app"))
	must(t, dfs(t, "", "appendToFile", la, "/app/f"))                   // creates
	must(t, dfs(t, "", "appendToFile", lb, la, "/app/f"))               // two sources, one append
	must(t, dfs(t, "tail from stdin\n", "appendToFile", "-", "/app/f")) // stdin
	want := bytes.Join([][]byte{a, b, a, []byte("tail from stdin\n")}, nil)
	if got := must(t, dfs(t, "", "cat", "/app/f")).stdout; got != string(want) {
		t.Fatalf("cat: %d bytes, want %d", len(got), len(want))
	}

	cases := []struct {
		name  string
		stdin string
		args  []string
		msg   string
	}{
		{"a directory", "", []string{"appendToFile", la, "/app"}, "dfs: appendToFile /app:"},
		{"missing parent", "", []string{"appendToFile", la, "/app/none/f"}, "dfs: appendToFile /app/none/f:"},
		{"missing local file", "", []string{"appendToFile", filepath.Join(dir, "none"), "/app/f"}, "appendToFile " + filepath.Join(dir, "none")},
		{"stdin among others", "x", []string{"appendToFile", "-", la, "/app/f"}, "only source"},
		{"one argument", "", []string{"appendToFile", "/app/f"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := dfs(t, c.stdin, c.args...)
			if r.code == 0 || !strings.Contains(r.stderr, c.msg) {
				t.Fatalf("got %+v, want a failure mentioning %q", r, c.msg)
			}
		})
	}
	if got := must(t, dfs(t, "", "cat", "/app/f")).stdout; got != string(want) {
		t.Fatal("a refused appendToFile changed the file")
	}
}
