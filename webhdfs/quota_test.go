package webhdfs_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestQuotaOps: SETQUOTA (HDFS 3's namespacequota and storagespacequota),
// GETCONTENTSUMMARY and GETQUOTAUSAGE, the quota exceptions as Hadoop
// names them (403, IOExceptions), and SETQUOTA refused to a user who is
// not a superuser.
func TestQuotaOps(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	alice := *e
	alice.user = "alice"
	type step struct {
		name    string
		as      *env
		method  string
		path    string
		op      string
		kv      []string
		status  int
		want    map[string]any // top-level object's fields, or the exception's
		object  string         // the answer's top-level object ("" for none)
		excName string
	}
	steps := []step{
		{"mkdir", e, "PUT", "/q", "MKDIRS", []string{"permission", "777"}, 200, nil, "", ""},
		{"set both", e, "PUT", "/q", "SETQUOTA", []string{"namespacequota", "3", "storagespacequota", "10240"}, 200, nil, "", ""},
		{"summary", e, "GET", "/q", "GETCONTENTSUMMARY", nil, 200, map[string]any{
			"directoryCount": 1.0, "fileCount": 0.0, "length": 0.0, "quota": 3.0, "spaceConsumed": 0.0, "spaceQuota": 10240.0, "typeQuota": map[string]any{},
		}, "ContentSummary", ""},
		{"usage", e, "GET", "/q", "GETQUOTAUSAGE", nil, 200, map[string]any{
			"fileAndDirectoryCount": 1.0, "quota": 3.0, "spaceConsumed": 0.0, "spaceQuota": 10240.0,
		}, "QuotaUsage", ""},
		{"not a superuser", &alice, "PUT", "/q", "SETQUOTA", []string{"namespacequota", "100"}, 403, nil, "", "AccessControlException"},
		{"below -1", e, "PUT", "/q", "SETQUOTA", []string{"namespacequota", "-2"}, 400, nil, "", "IllegalArgumentException"},
		{"mkdir a", e, "PUT", "/q/a", "MKDIRS", nil, 200, nil, "", ""},
		{"mkdir b", e, "PUT", "/q/b", "MKDIRS", nil, 200, nil, "", ""},
		{"mkdir past the quota", &alice, "PUT", "/q/c", "MKDIRS", nil, 403, nil, "", "NSQuotaExceededException"},
		{"clear the namespace quota only", e, "PUT", "/q", "SETQUOTA", []string{"namespacequota", "-1"}, 200, nil, "", ""},
		{"space quota kept", e, "GET", "/q", "GETCONTENTSUMMARY", nil, 200, map[string]any{
			"directoryCount": 3.0, "quota": -1.0, "spaceQuota": 10240.0,
		}, "ContentSummary", ""},
		{"no quota", e, "GET", "/", "GETCONTENTSUMMARY", nil, 200, map[string]any{"quota": -1.0, "spaceQuota": -1.0}, "ContentSummary", ""},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			st, _, b := s.as.do(s.method, s.as.url(s.path, s.op, s.kv...), nil)
			if st != s.status {
				t.Fatalf("status %d, want %d: %s", st, s.status, b)
			}
			if s.excName != "" {
				if ex, ok := remote(b); !ok || ex != s.excName {
					t.Fatalf("answer %s, want RemoteException %s", b, s.excName)
				}
				if s.excName == "NSQuotaExceededException" && !strings.Contains(string(b), "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException") {
					t.Fatalf("javaClassName missing: %s", b)
				}
				return
			}
			if s.object == "" {
				return
			}
			v := jsonOf(t, b)
			for k, w := range s.want {
				got := dig(v, s.object, k)
				if m, ok := w.(map[string]any); ok {
					if g, ok := got.(map[string]any); !ok || len(g) != len(m) {
						t.Errorf("%s = %v, want %v", k, got, w)
					}
					continue
				}
				if got != w {
					t.Errorf("%s = %v, want %v", k, got, w)
				}
			}
		})
	}

	// Space: blocks of 1024 bytes, replication 3, each charged in full
	// when allocated: the fourth (3×4096 > 10240) is refused.
	st, b := e.put("/q/big", make([]byte, 4000), "blocksize", "1024", "replication", "3")
	if ex, _ := remote(b); st != http.StatusForbidden || ex != "DSQuotaExceededException" {
		t.Fatalf("CREATE past the space quota: %d %s, want 403 DSQuotaExceededException", st, b)
	}
	// The refused file stays open with its three blocks charged, as in
	// HDFS, until it is deleted (or its lease recovered).
	if st, _, b := e.do(http.MethodDelete, e.url("/q/big", "DELETE"), nil); st != http.StatusOK {
		t.Fatalf("DELETE: %d %s", st, b)
	}
	st, b = e.put("/q/small", make([]byte, 1500), "blocksize", "1024", "replication", "3")
	if st != http.StatusCreated {
		t.Fatalf("CREATE within the space quota: %d %s", st, b)
	}
	v := jsonOf(t, func() []byte { _, _, b := e.do(http.MethodGet, e.url("/q", "GETCONTENTSUMMARY"), nil); return b }())
	if dig(v, "ContentSummary", "spaceConsumed") != 4500.0 || dig(v, "ContentSummary", "length") != 1500.0 {
		t.Fatalf("after the write: %v", v)
	}
}
