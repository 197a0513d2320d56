package main

import (
	"strings"
	"testing"
)

// TestSnapshotCommands: admin allowSnapshot, createSnapshot, a snapshot
// that still reads the bytes of a removed and of an overwritten file,
// lsSnapshottableDir, renameSnapshot, deleteSnapshot and admin
// disallowSnapshot; the refusals say why.
func TestSnapshotCommands(t *testing.T) {
	must(t, dfs(t, "", "mkdir", "-p", "/snaps/d"))
	must(t, dfs(t, "first bytes", "put", "-", "/snaps/d/f"))
	must(t, dfs(t, "other bytes", "put", "-", "/snaps/d/g"))
	r := dfs(t, "", "createSnapshot", "/snaps/d", "s1")
	if r.code != 1 || !strings.Contains(r.stderr, "not a snapshottable directory") {
		t.Fatalf("createSnapshot before allowSnapshot: %+v", r)
	}
	r = dfs(t, "", "--user", "alice", "admin", "allowSnapshot", "/snaps/d")
	if r.code != 1 || !strings.Contains(r.stderr, "Superuser privilege is required") {
		t.Fatalf("allowSnapshot as alice: %+v", r)
	}
	if r = must(t, dfs(t, "", "admin", "allowSnapshot", "/snaps/d")); r.stdout != "Allowing snapshot on /snaps/d succeeded\n" {
		t.Fatalf("allowSnapshot said %q", r.stdout)
	}
	if r = must(t, dfs(t, "", "createSnapshot", "/snaps/d", "s1")); r.stdout != "Created snapshot /snaps/d/.snapshot/s1\n" {
		t.Fatalf("createSnapshot said %q", r.stdout)
	}
	must(t, dfs(t, "", "rm", "/snaps/d/f"))
	must(t, dfs(t, "new bytes", "put", "-f", "-", "/snaps/d/g"))
	if r = must(t, dfs(t, "", "cat", "/snaps/d/.snapshot/s1/f", "/snaps/d/.snapshot/s1/g")); r.stdout != "first bytesother bytes" {
		t.Fatalf("snapshot reads %q", r.stdout)
	}
	r = dfs(t, "x", "put", "-", "/snaps/d/.snapshot/s1/h")
	if r.code != 1 || !strings.Contains(r.stderr, "read-only snapshot") {
		t.Fatalf("put into a snapshot: %+v", r)
	}
	r = dfs(t, "", "rm", "-r", "/snaps")
	if r.code != 1 || !strings.Contains(r.stderr, "already has snapshots") {
		t.Fatalf("rm of a directory with snapshots: %+v", r)
	}
	r = must(t, dfs(t, "", "lsSnapshottableDir"))
	if f := strings.Fields(r.stdout); len(f) != 10 || f[0] != "drwxr-xr-x" || f[7] != "1" || f[8] != "65536" || f[9] != "/snaps/d" {
		t.Fatalf("lsSnapshottableDir: %q", r.stdout)
	}
	must(t, dfs(t, "", "renameSnapshot", "/snaps/d", "s1", "kept"))
	if r = must(t, dfs(t, "", "ls", "/snaps/d/.snapshot")); !strings.Contains(r.stdout, "/snaps/d/.snapshot/kept") {
		t.Fatalf("ls .snapshot: %q", r.stdout)
	}
	r = dfs(t, "", "admin", "disallowSnapshot", "/snaps/d")
	if r.code != 1 || !strings.Contains(r.stderr, "has snapshot(s)") {
		t.Fatalf("disallowSnapshot with a snapshot: %+v", r)
	}
	must(t, dfs(t, "", "deleteSnapshot", "/snaps/d", "kept"))
	r = dfs(t, "", "cat", "/snaps/d/.snapshot/kept/f")
	if r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("cat of a deleted snapshot: %+v", r)
	}
	must(t, dfs(t, "", "admin", "disallowSnapshot", "/snaps/d"))
	must(t, dfs(t, "", "rm", "-r", "/snaps"))
}
