package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestParseQuota(t *testing.T) {
	cases := []struct {
		in    string
		space bool
		want  int64 // 0: refused
	}{
		{"10", false, 10},
		{"10g", false, 0}, // suffixes are for space quotas
		{"10g", true, 10 << 30},
		{"1T", true, 1 << 40},
		{"3k", true, 3 << 10},
		{"5", true, 5},
		{"0", false, 0},
		{"-1", true, 0},
		{"x", true, 0},
		{"9223372036854775807", false, 0}, // QUOTA_DONT_SET is not a quota
		{"8e", true, 0},                   // overflows
	}
	for _, c := range cases {
		got, err := parseQuota(c.in, c.space)
		if c.want == 0 && err == nil || c.want != 0 && (err != nil || got != c.want) {
			t.Errorf("parseQuota(%q, %v) = %d, %v; want %d", c.in, c.space, got, err, c.want)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1023: "1023", 1024: "1 K", 1536: "1.5 K", 10 << 30: "10 G", 1<<20 - 1: "1.0 M", -2048: "-2 K"} {
		if got := size(n, true); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestQuotaCommands: setQuota, setSpaceQuota, count -q, the refusals
// past a quota and to a user who is not a superuser, clrQuota and
// clrSpaceQuota.
func TestQuotaCommands(t *testing.T) {
	must(t, dfs(t, "", "mkdir", "-p", "/quota/a", "/quota/b"))
	must(t, dfs(t, "", "setQuota", "4", "/quota/a", "/quota/b"))
	must(t, dfs(t, "", "setSpaceQuota", "1g", "/quota/a"))
	must(t, dfs(t, "abc", "put", "-replication", "2", "-", "/quota/a/f"))
	r := must(t, dfs(t, "", "count", "-q", "/quota/a", "/quota/b"))
	want := "           4               2      1073741824      1073741818            1            1                  3 /quota/a\n" +
		"           4               3            none             inf            1            0                  0 /quota/b\n"
	if r.stdout != want {
		t.Errorf("count -q:\n%q\nwant\n%q", r.stdout, want)
	}
	r = must(t, dfs(t, "", "count", "-q", "-h", "/quota/a"))
	if !strings.HasPrefix(r.stdout, "           4               2             1 G           1.0 G ") {
		t.Errorf("count -q -h: %q", r.stdout)
	}
	r = must(t, dfs(t, "", "count", "/quota"))
	if r.stdout != "           3            1                  3 /quota\n" {
		t.Errorf("count: %q", r.stdout)
	}
	must(t, dfs(t, "", "mkdir", "/quota/a/d", "/quota/a/e"))
	if r := dfs(t, "", "mkdir", "/quota/a/g"); r.code != 1 || !strings.Contains(r.stderr, "NSQuotaExceededException") {
		t.Errorf("mkdir past the quota: %+v", r)
	}
	full := []string{"--namenodes", strings.Join(cluster.NamenodeAddrs(), ","), "--user", "mallory", "setQuota", "100", "/quota/a"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), full, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(errb.String(), "permission denied") {
		t.Errorf("setQuota as mallory: %d %q", code, errb.String())
	}
	if r := dfs(t, "", "setQuota", "0", "/quota/a"); r.code != 2 {
		t.Errorf("setQuota 0: %+v", r)
	}
	must(t, dfs(t, "", "clrQuota", "/quota/a"))
	must(t, dfs(t, "", "clrSpaceQuota", "/quota/a"))
	r = must(t, dfs(t, "", "count", "-q", "/quota/a"))
	if !strings.HasPrefix(r.stdout, "        none             inf            none             inf ") {
		t.Errorf("count -q after clearing: %q", r.stdout)
	}
	must(t, dfs(t, "", "mkdir", "/quota/a/g"))
}
