package webhdfs_test

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/blockfs/blockfs/client"
)

// jsonOf decodes b into a generic JSON value.
func jsonOf(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// dig follows keys (strings for objects, ints for arrays) into v.
func dig(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// TestMetadataOps: every served metadata op, its JSON shape and its
// effect, through the namenode's HTTP port as the superuser.
func TestMetadataOps(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	cl := e.client()
	ctx := ctxT(t)
	data := make([]byte, 2500)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := cl.WriteFile(ctx, "/d/f", data, client.CreateOptions{Perm: 0o640, Replication: 2, BlockSize: 1024}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, cl, "/d/f", 2)
	cases := []struct {
		name   string
		method string
		path   string
		op     string
		kv     []string
		status int
		check  func(t *testing.T, v map[string]any)
	}{
		{"GETFILESTATUS file", "GET", "/d/f", "GETFILESTATUS", nil, 200, func(t *testing.T, v map[string]any) {
			want := map[string]any{"type": "FILE", "length": 2500.0, "permission": "640", "replication": 2.0, "blockSize": 1024.0, "owner": "root", "pathSuffix": ""}
			for k, w := range want {
				if got := dig(v, "FileStatus", k); got != w {
					t.Errorf("%s = %v, want %v", k, got, w)
				}
			}
		}},
		{"GETFILESTATUS dir", "GET", "/d/", "GETFILESTATUS", nil, 200, func(t *testing.T, v map[string]any) {
			if dig(v, "FileStatus", "type") != "DIRECTORY" || dig(v, "FileStatus", "childrenNum") != 1.0 {
				t.Errorf("got %v", v)
			}
		}},
		{"MKDIRS", "PUT", "/d/e/g", "MKDIRS", []string{"permission", "750"}, 200, func(t *testing.T, v map[string]any) {
			if v["boolean"] != true {
				t.Errorf("got %v", v)
			}
			if st, err := cl.Stat(ctx, "/d/e/g"); err != nil || st.Mode != 0o750 {
				t.Errorf("stat: %v %v", st, err)
			}
		}},
		{"LISTSTATUS", "GET", "/d", "LISTSTATUS", nil, 200, func(t *testing.T, v map[string]any) {
			if dig(v, "FileStatuses", "FileStatus", 0, "pathSuffix") != "e" || dig(v, "FileStatuses", "FileStatus", 1, "pathSuffix") != "f" {
				t.Errorf("got %v", v)
			}
		}},
		{"LISTSTATUS file", "GET", "/d/f", "LISTSTATUS", nil, 200, func(t *testing.T, v map[string]any) {
			if dig(v, "FileStatuses", "FileStatus", 0, "pathSuffix") != "" || dig(v, "FileStatuses", "FileStatus", 0, "type") != "FILE" {
				t.Errorf("got %v", v)
			}
		}},
		{"LISTSTATUS_BATCH", "GET", "/d", "LISTSTATUS_BATCH", []string{"startAfter", "e"}, 200, func(t *testing.T, v map[string]any) {
			l := dig(v, "DirectoryListing")
			if dig(l, "partialListing", "FileStatuses", "FileStatus", 0, "pathSuffix") != "f" || dig(l, "remainingEntries") != 0.0 {
				t.Errorf("got %v", v)
			}
		}},
		{"GETCONTENTSUMMARY", "GET", "/d", "GETCONTENTSUMMARY", nil, 200, func(t *testing.T, v map[string]any) {
			want := map[string]any{"directoryCount": 3.0, "fileCount": 1.0, "length": 2500.0, "spaceConsumed": 5000.0, "quota": -1.0}
			for k, w := range want {
				if got := dig(v, "ContentSummary", k); got != w {
					t.Errorf("%s = %v, want %v", k, got, w)
				}
			}
		}},
		{"GETFILEBLOCKLOCATIONS", "GET", "/d/f", "GETFILEBLOCKLOCATIONS", []string{"offset", "1030", "length", "5"}, 200, func(t *testing.T, v map[string]any) {
			bl := dig(v, "BlockLocations", "BlockLocation").([]any)
			if len(bl) != 1 || dig(bl, 0, "offset") != 1024.0 || dig(bl, 0, "length") != 1024.0 || len(dig(bl, 0, "hosts").([]any)) != 2 {
				t.Errorf("got %v", v)
			}
		}},
		{"GET_BLOCK_LOCATIONS", "GET", "/d/f", "GET_BLOCK_LOCATIONS", nil, 200, func(t *testing.T, v map[string]any) {
			lb := dig(v, "LocatedBlocks")
			if dig(lb, "fileLength") != 2500.0 || len(dig(lb, "locatedBlocks").([]any)) != 3 || dig(lb, "lastLocatedBlock", "startOffset") != 2048.0 ||
				dig(lb, "locatedBlocks", 2, "block", "numBytes") != 452.0 || dig(lb, "isUnderConstruction") != false {
				t.Errorf("got %v", v)
			}
		}},
		{"GETFILECHECKSUM", "GET", "/d/f", "GETFILECHECKSUM", nil, 200, func(t *testing.T, v map[string]any) {
			want := fmt.Sprintf("%08x", crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
			if dig(v, "FileChecksum", "algorithm") != "COMPOSITE-CRC32C" || dig(v, "FileChecksum", "bytes") != want || dig(v, "FileChecksum", "length") != 4.0 {
				t.Errorf("got %v, want bytes %s", v, want)
			}
		}},
		{"GETHOMEDIRECTORY", "GET", "/", "GETHOMEDIRECTORY", nil, 200, func(t *testing.T, v map[string]any) {
			if v["Path"] != "/user/root" {
				t.Errorf("got %v", v)
			}
		}},
		{"GETTRASHROOT", "GET", "/d/f", "GETTRASHROOT", nil, 200, func(t *testing.T, v map[string]any) {
			if v["Path"] != "/user/root/.Trash" {
				t.Errorf("got %v", v)
			}
		}},
		{"SETPERMISSION", "PUT", "/d/f", "SETPERMISSION", []string{"permission", "1604"}, 200, func(t *testing.T, _ map[string]any) {
			if st, _ := cl.Stat(ctx, "/d/f"); st.GetMode() != 0o1604 {
				t.Errorf("mode %o", st.GetMode())
			}
		}},
		{"SETOWNER", "PUT", "/d/f", "SETOWNER", []string{"owner", "bob", "group", "staff"}, 200, func(t *testing.T, _ map[string]any) {
			if st, _ := cl.Stat(ctx, "/d/f"); st.GetOwner() != "bob" || st.GetGroup() != "staff" {
				t.Errorf("owner %s:%s", st.GetOwner(), st.GetGroup())
			}
		}},
		{"RENAME", "PUT", "/d/f", "RENAME", []string{"destination", "/d/e/h"}, 200, func(t *testing.T, v map[string]any) {
			if v["boolean"] != true {
				t.Errorf("got %v", v)
			}
			if _, err := cl.Stat(ctx, "/d/e/h"); err != nil {
				t.Error(err)
			}
		}},
		{"RENAME missing source", "PUT", "/d/nope", "RENAME", []string{"destination", "/d/x"}, 200, func(t *testing.T, v map[string]any) {
			if v["boolean"] != false {
				t.Errorf("got %v", v)
			}
		}},
		{"DELETE missing", "DELETE", "/d/nope", "DELETE", nil, 200, func(t *testing.T, v map[string]any) {
			if v["boolean"] != false {
				t.Errorf("got %v", v)
			}
		}},
		{"DELETE recursive", "DELETE", "/d", "DELETE", []string{"recursive", "true"}, 200, func(t *testing.T, v map[string]any) {
			if v["boolean"] != true {
				t.Errorf("got %v", v)
			}
			if _, err := cl.Stat(ctx, "/d"); err == nil {
				t.Error("/d still there")
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, h, b := e.do(c.method, e.url(c.path, c.op, c.kv...), nil)
			if st != c.status {
				t.Fatalf("status %d, want %d: %s", st, c.status, b)
			}
			if len(b) == 0 {
				c.check(t, nil)
				return
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			c.check(t, jsonOf(t, b))
		})
	}
}
