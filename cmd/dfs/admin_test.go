package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// dfsAs runs the command line against the test cluster as user.
func dfsAs(t *testing.T, user string, args ...string) result {
	t.Helper()
	if cluster == nil {
		t.Skip("no cluster in -short mode")
	}
	full := append([]string{"--namenodes", strings.Join(cluster.NamenodeAddrs(), ","), "--user", user, "--timeout", "30s"}, args...)
	var out, errb bytes.Buffer
	code := run(context.Background(), full, strings.NewReader(""), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// TestAdminRevoke: dfs admin revoke puts an identity on the deny list
// (under simple auth, the stated name), the revoked user is refused, the
// list shows the entry with who revoked it, and unrevoke lifts it; bad
// arguments are usage errors and a non-superuser is refused.
func TestAdminRevoke(t *testing.T) {
	must(t, dfsAs(t, "mallory", "ls", "/"))
	for _, c := range []struct {
		name string
		user string
		args []string
		code int
		want string // in stderr
	}{
		{"no entry", "root", []string{"admin", "revoke"}, 2, "exactly one"},
		{"two entries", "root", []string{"admin", "revoke", "--serial", "1", "--identity", "user:x"}, 2, "exactly one"},
		{"identity without role", "root", []string{"admin", "revoke", "--identity", "mallory"}, 2, "ROLE:NAME"},
		{"unknown subcommand", "root", []string{"admin", "frobnicate"}, 2, "unknown admin command"},
		{"bad serial", "root", []string{"admin", "revoke", "--serial", "xyz"}, 1, "not a hexadecimal"},
		{"not the superuser", "alice", []string{"admin", "revoke", "--identity", "user:mallory"}, 1, "permission denied"},
		{"not the superuser lists", "alice", []string{"admin", "revoked"}, 1, "permission denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dfsAs(t, c.user, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q:\n%s", r.code, c.code, c.want, r.stderr)
			}
		})
	}
	must(t, dfs(t, "", "admin", "revoke", "--identity", "user:mallory", "--reason", "left the company"))
	if r := dfsAs(t, "mallory", "ls", "/"); r.code != 1 || !strings.Contains(r.stderr, "revoked") {
		t.Fatalf("revoked user: exit %d\n%s", r.code, r.stderr)
	}
	must(t, dfsAs(t, "bob", "ls", "/"))
	if r := must(t, dfs(t, "", "admin", "revoked")); !strings.Contains(r.stdout, "identity user:mallory") || !strings.Contains(r.stdout, "user/root") || !strings.Contains(r.stdout, "left the company") {
		t.Fatalf("list:\n%s", r.stdout)
	}
	if r := must(t, dfs(t, "", "--json", "admin", "revoked")); !strings.Contains(r.stdout, `"what": "identity user:mallory"`) {
		t.Fatalf("json list:\n%s", r.stdout)
	}
	must(t, dfs(t, "", "admin", "unrevoke", "--identity", "user:mallory"))
	must(t, dfsAs(t, "mallory", "ls", "/"))
	if r := dfs(t, "", "admin", "unrevoke", "--identity", "user:mallory"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("unrevoke twice: exit %d\n%s", r.code, r.stderr)
	}
}
