package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestXAttrCommands: setfattr with each value encoding, getfattr -n, -d,
// -e and -R in hdfs dfs -getfattr's format, setfattr -x, and the usage
// and namespace refusals.
func TestXAttrCommands(t *testing.T) {
	must(t, dfs(t, "", "mkdir", "-p", "/xa/d"))
	must(t, dfs(t, "abc", "put", "-", "/xa/d/f"))
	must(t, dfs(t, "", "setfattr", "-n", "user.color", "-v", `"blue"`, "/xa/d/f"))
	must(t, dfs(t, "", "setfattr", "-n", "USER.raw", "-v", "0x00ff", "/xa/d/f"))
	must(t, dfs(t, "", "setfattr", "-n", "user.dir", "/xa/d"))
	r := must(t, dfs(t, "", "getfattr", "-d", "/xa/d/f"))
	if want := "# file: /xa/d/f\nuser.color=\"blue\"\nuser.raw=\"\x00\xff\"\n\n"; r.stdout != want {
		t.Errorf("getfattr -d:\n%q\nwant\n%q", r.stdout, want)
	}
	r = must(t, dfs(t, "", "getfattr", "-n", "user.raw", "-e", "hex", "/xa/d/f"))
	if want := "# file: /xa/d/f\nuser.raw=0x00ff\n\n"; r.stdout != want {
		t.Errorf("getfattr -n -e hex: %q", r.stdout)
	}
	r = must(t, dfs(t, "", "getfattr", "-R", "-d", "-e", "base64", "/xa"))
	if want := "# file: /xa\n\n# file: /xa/d\nuser.dir=0s\n\n# file: /xa/d/f\nuser.color=0sYmx1ZQ==\nuser.raw=0sAP8=\n\n"; r.stdout != want {
		t.Errorf("getfattr -R:\n%q\nwant\n%q", r.stdout, want)
	}
	must(t, dfs(t, "", "setfattr", "-x", "user.raw", "/xa/d/f"))
	r = dfs(t, "", "getfattr", "-n", "user.raw", "/xa/d/f")
	if r.code != 1 || !strings.Contains(r.stderr, "At least one of the attributes provided was not found.") {
		t.Errorf("getfattr of a removed attribute: %d %q", r.code, r.stderr)
	}
	for _, bad := range [][]string{
		{"setfattr", "/xa/d/f"},
		{"setfattr", "-n", "user.a", "-x", "user.a", "/xa/d/f"},
		{"getfattr", "/xa/d/f"},
		{"getfattr", "-d", "-e", "rot13", "/xa/d/f"},
		{"setfattr", "-n", "user.a", "-v", "0xzz", "/xa/d/f"},
	} {
		if r := dfs(t, "", bad...); r.code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", bad, r.code, r.stderr)
		}
	}
	if r := dfs(t, "", "setfattr", "-n", "color", "/xa/d/f"); r.code != 1 || !strings.Contains(r.stderr, "must be prefixed") {
		t.Errorf("a name without a namespace: %d %q", r.code, r.stderr)
	}
}

// TestTouchAndTruncate: touch creates a missing file (not with -c), sets
// both times or one (-a, -m) to -t's; truncate at a boundary and inside a
// block (-w waits for the recovery), the prefix read back.
func TestTouchAndTruncate(t *testing.T) {
	must(t, dfs(t, "", "mkdir", "-p", "/tt"))
	must(t, dfs(t, "", "touch", "-t", "20200102:030405", "/tt/new"))
	want := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local).UTC().Format(time.RFC3339Nano)
	stat := func(p string) fileJSON {
		t.Helper()
		var out []fileJSON
		if err := json.Unmarshal([]byte(must(t, dfs(t, "", "--json", "stat", p)).stdout), &out); err != nil || len(out) != 1 {
			t.Fatalf("stat %s: %v", p, err)
		}
		return out[0]
	}
	if st := stat("/tt/new"); st.Mtime != want || st.Atime != want || st.Length != 0 || st.Type != "file" {
		t.Fatalf("touch -t: %+v (want %s)", st, want)
	}
	must(t, dfs(t, "", "touch", "-a", "-t", "20210101:000000", "/tt/new"))
	if st, a := stat("/tt/new"), time.Date(2021, 1, 1, 0, 0, 0, 0, time.Local).UTC().Format(time.RFC3339Nano); st.Mtime != want || st.Atime != a {
		t.Fatalf("touch -a: %+v", st)
	}
	must(t, dfs(t, "", "touch", "-m", "-t", "20220101:000000", "/tt/new"))
	if st, m := stat("/tt/new"), time.Date(2022, 1, 1, 0, 0, 0, 0, time.Local).UTC().Format(time.RFC3339Nano); st.Mtime != m || st.Atime == m {
		t.Fatalf("touch -m: %+v", st)
	}
	must(t, dfs(t, "", "touch", "-c", "/tt/none"))
	if r := dfs(t, "", "stat", "/tt/none"); r.code == 0 {
		t.Fatal("touch -c created a file")
	}
	if r := dfs(t, "", "touch", "-t", "yesterday", "/tt/new"); r.code != 2 {
		t.Fatalf("touch -t yesterday: exit %d", r.code)
	}

	data := strings.Repeat("0123456789", 3*testBlock/10+7)
	must(t, dfs(t, data, "put", "-", "/tt/f"))
	cut := strconv.Itoa(2*testBlock + 100)
	r := must(t, dfs(t, "", "truncate", "-w", cut, "/tt/f"))
	if !strings.HasSuffix(r.stdout, "Truncated /tt/f to length: "+cut+"\n") {
		t.Fatalf("truncate -w: %q", r.stdout)
	}
	if r := must(t, dfs(t, "", "cat", "/tt/f")); r.stdout != data[:2*testBlock+100] {
		t.Fatalf("after truncate: %d bytes, want %d", len(r.stdout), 2*testBlock+100)
	}
	r = must(t, dfs(t, "", "truncate", strconv.Itoa(testBlock), "/tt/f"))
	if r.stdout != "Truncated /tt/f to length: "+strconv.Itoa(testBlock)+"\n" {
		t.Fatalf("truncate at a boundary: %q", r.stdout)
	}
	r = must(t, dfs(t, "", "truncate", "10", "/tt/f"))
	if r.stdout != "Truncating /tt/f to length: 10. Wait for block recovery to complete before further updating this file.\n" {
		t.Fatalf("truncate inside a block: %q", r.stdout)
	}
	must(t, dfs(t, "abc", "put", "-", "/tt/open"))
	if r := dfs(t, "", "truncate", "-1", "/tt/f"); r.code != 2 {
		t.Fatalf("truncate -1: exit %d", r.code)
	}
	if r := dfs(t, "", "truncate", "99999999", "/tt/open"); r.code != 1 || !strings.Contains(r.stderr, "Cannot truncate to a larger file size") {
		t.Fatalf("truncate past the end: %d %q", r.code, r.stderr)
	}
}
