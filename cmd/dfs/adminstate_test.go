package main

import (
	"strings"
	"testing"
	"time"
)

// TestAdminDecommission: dfs admin decommission/recommission/maintenance
// change a datanode's admin state, which dfs cluster shows; bad
// arguments are usage errors, bad datanodes and non-superusers refused.
func TestAdminDecommission(t *testing.T) {
	must(t, dfs(t, "", "ls", "/"))
	dn := cluster.DatanodeID(4)
	for _, c := range []struct {
		name string
		user string
		args []string
		code int
		want string // in stderr
	}{
		{"no datanode", "root", []string{"admin", "decommission"}, 2, "one or more datanodes"},
		{"unknown datanode", "root", []string{"admin", "decommission", "dn-nope"}, 1, "no datanode \"dn-nope\""},
		{"not the superuser", "alice", []string{"admin", "decommission", dn}, 1, "permission denied"},
		{"not the superuser refreshes", "alice", []string{"admin", "refreshNodes"}, 1, "permission denied"},
		{"maintenance without until", "root", []string{"admin", "maintenance", dn}, 2, "--until"},
		{"maintenance bad until", "root", []string{"admin", "maintenance", dn, "--until", "soon"}, 2, "neither RFC3339"},
		{"maintenance in the past", "root", []string{"admin", "maintenance", dn, "--until", "2001-01-01T00:00:00Z"}, 1, "in the future"},
		{"refresh without a file", "root", []string{"admin", "refreshNodes"}, 1, "no exclude file"},
		{"until on decommission", "root", []string{"admin", "decommission", dn, "--until", "1h"}, 2, "--until is for admin maintenance"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dfsAs(t, c.user, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q:\n%s", r.code, c.code, c.want, r.stderr)
			}
		})
	}
	adminOf := func() string {
		t.Helper()
		for _, line := range strings.Split(must(t, dfs(t, "", "cluster")).stdout, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] == dn {
				return f[2]
			}
		}
		t.Fatalf("%s not in dfs cluster", dn)
		return ""
	}
	if got := adminOf(); got != "NORMAL" {
		t.Fatalf("before: %s", got)
	}
	if r := must(t, dfs(t, "", "admin", "maintenance", dn, "--until", "1h", "--maintenance-min-replicas", "1")); !strings.Contains(r.stdout, dn) {
		t.Fatalf("maintenance: %s", r.stdout)
	}
	deadline := time.Now().Add(20 * time.Second)
	for got := adminOf(); got != "IN_MAINTENANCE"; got = adminOf() {
		if got != "ENTERING_MAINTENANCE" || time.Now().After(deadline) {
			t.Fatalf("in maintenance: %s", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	must(t, dfs(t, "", "admin", "recommission", dn))
	if got := adminOf(); got != "NORMAL" {
		t.Fatalf("after recommission: %s", got)
	}
	if r := must(t, dfs(t, "", "admin", "recommission", dn)); !strings.Contains(r.stdout, "nothing to change") {
		t.Fatalf("second recommission: %s", r.stdout)
	}
}
