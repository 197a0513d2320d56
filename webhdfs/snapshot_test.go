package webhdfs_test

import (
	"net/http"
	"testing"
)

// TestSnapshotOps: ALLOWSNAPSHOT, CREATESNAPSHOT ({"Path": ...}), reads
// of a deleted file under .snapshot (GETFILESTATUS, LISTSTATUS, OPEN),
// GETSNAPSHOTTABLEDIRECTORYLIST, RENAMESNAPSHOT, DELETESNAPSHOT and
// DISALLOWSNAPSHOT; a write under .snapshot is SnapshotAccessControlException,
// the directory's state refusing one SnapshotException, a user who is not
// a superuser AccessControlException.
func TestSnapshotOps(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	alice := *e
	alice.user = "alice"
	if st, b := e.put("/s/f", []byte("snapshot me")); st != http.StatusCreated {
		t.Fatalf("CREATE: %d %s", st, b)
	}
	type step struct {
		name      string
		as        *env
		method, p string
		op        string
		kv        []string
		status    int
		excName   string
		object, k string // a top-level object and a field of it, when want is set
		want      any
	}
	steps := []step{
		{"create before allow", e, "PUT", "/s", "CREATESNAPSHOT", []string{"snapshotname", "s1"}, 403, "SnapshotException", "", "", nil},
		{"allow as alice", &alice, "PUT", "/s", "ALLOWSNAPSHOT", nil, 403, "AccessControlException", "", "", nil},
		{"allow", e, "PUT", "/s", "ALLOWSNAPSHOT", nil, 200, "", "", "", nil},
		{"create", e, "PUT", "/s", "CREATESNAPSHOT", []string{"snapshotname", "s1"}, 200, "", "Path", "", "/s/.snapshot/s1"},
		{"create again", e, "PUT", "/s", "CREATESNAPSHOT", []string{"snapshotname", "s1"}, 403, "FileAlreadyExistsException", "", "", nil},
		{"delete the live file", e, "DELETE", "/s/f", "DELETE", nil, 200, "", "boolean", "", true},
		{"stat in the snapshot", e, "GET", "/s/.snapshot/s1/f", "GETFILESTATUS", nil, 200, "", "FileStatus", "length", 11.0},
		{"list .snapshot", e, "GET", "/s/.snapshot", "LISTSTATUS", nil, 200, "", "", "", nil},
		{"write in the snapshot", e, "PUT", "/s/.snapshot/s1/d", "MKDIRS", nil, 403, "SnapshotAccessControlException", "", "", nil},
		{"delete the directory", e, "DELETE", "/s", "DELETE", []string{"recursive", "true"}, 403, "SnapshotException", "", "", nil},
		{"disallow with a snapshot", e, "PUT", "/s", "DISALLOWSNAPSHOT", nil, 403, "SnapshotException", "", "", nil},
		{"rename", e, "PUT", "/s", "RENAMESNAPSHOT", []string{"oldsnapshotname", "s1", "snapshotname", "kept"}, 200, "", "", "", nil},
		{"stat renamed", e, "GET", "/s/.snapshot/kept/f", "GETFILESTATUS", nil, 200, "", "FileStatus", "length", 11.0},
		{"delete missing", e, "DELETE", "/s", "DELETESNAPSHOT", []string{"snapshotname", "s1"}, 404, "FileNotFoundException", "", "", nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			st, _, b := s.as.do(s.method, s.as.url(s.p, s.op, s.kv...), nil)
			if st != s.status {
				t.Fatalf("status %d, want %d: %s", st, s.status, b)
			}
			if s.excName != "" {
				if ex, ok := remote(b); !ok || ex != s.excName {
					t.Fatalf("answer %s, want RemoteException %s", b, s.excName)
				}
				return
			}
			if s.want == nil {
				return
			}
			v := jsonOf(t, b)
			var got any = v[s.object]
			if s.k != "" {
				got = dig(v, s.object, s.k)
			}
			if got != s.want {
				t.Fatalf("%s.%s = %v, want %v (%s)", s.object, s.k, got, s.want, b)
			}
		})
	}
	if st, b := e.get("/s/.snapshot/kept/f"); st != http.StatusOK || string(b) != "snapshot me" {
		t.Fatalf("OPEN in the snapshot: %d %q", st, b)
	}
	st, _, b := e.do("GET", e.url("/", "GETSNAPSHOTTABLEDIRECTORYLIST"), nil)
	list, _ := jsonOf(t, b)["SnapshottableDirectoryList"].([]any)
	if st != 200 || len(list) != 1 {
		t.Fatalf("GETSNAPSHOTTABLEDIRECTORYLIST: %d %s", st, b)
	}
	d := list[0].(map[string]any)
	if d["parentFullPath"] != "/" || d["snapshotNumber"] != 1.0 || d["snapshotQuota"] != 65536.0 || d["dirStatus"].(map[string]any)["pathSuffix"] != "s" {
		t.Fatalf("entry %v", d)
	}
	for _, s := range [][]string{{"DELETE", "DELETESNAPSHOT", "snapshotname", "kept"}, {"PUT", "DISALLOWSNAPSHOT"}, {"DELETE", "DELETE", "recursive", "true"}} {
		if st, _, b := e.do(s[0], e.url("/s", s[1], s[2:]...), nil); st != 200 {
			t.Fatalf("%s: %d %s", s[1], st, b)
		}
	}
}
