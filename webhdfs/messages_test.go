package webhdfs_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/client"
)

// TestHadoopMessages: each Hadoop exception blockfs has an equivalent of
// comes over WebHDFS with Hadoop's class and HDFS's own wording of the
// message (errs/hadoop), which clients that read only the message (the
// npm webhdfs client) match on.
func TestHadoopMessages(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	cl := e.client()
	ctx := ctxT(t)
	if err := cl.Mkdirs(ctx, "/a/sub", 0o755, true); err != nil {
		t.Fatal(err)
	}
	if err := cl.WriteFile(ctx, "/a/f", []byte("data"), client.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Create(ctx, "/a/open", client.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/q", "/s"} {
		if err := cl.Mkdirs(ctx, p, 0o777, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.SetQuota(ctx, "/q", 1, -1); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetQuota(ctx, "/s", -1, 1); err != nil {
		t.Fatal(err)
	}
	eve := *e
	eve.user = "eve"
	cases := []struct {
		name           string
		as             *env
		method, p, op  string
		kv             []string
		follow         bool
		status         int
		class, message string // message: the whole of it, or its start when it ends in "..."
	}{
		{"stat a missing file", e, "GET", "/nope", "GETFILESTATUS", nil, false, 404,
			"java.io.FileNotFoundException", "File does not exist: /nope"},
		{"list a missing directory", e, "GET", "/nope/x", "LISTSTATUS", nil, false, 404,
			"java.io.FileNotFoundException", "File does not exist: /nope/x"},
		{"open a missing file", e, "GET", "/a/nope", "OPEN", nil, false, 404,
			"java.io.FileNotFoundException", "File does not exist: /a/nope"},
		{"open a directory", e, "GET", "/a", "OPEN", nil, false, 404,
			"java.io.FileNotFoundException", "Path is not a file: /a"},
		{"mkdirs without permission", &eve, "PUT", "/a/x", "MKDIRS", nil, false, 403,
			"org.apache.hadoop.security.AccessControlException", `Permission denied: user=eve, access=WRITE_EXECUTE, inode="/a":root:supergroup:drwxr-xr-x...`},
		{"create over a file", e, "PUT", "/a/f", "CREATE", []string{"overwrite", "false"}, true, 403,
			"org.apache.hadoop.fs.FileAlreadyExistsException", "/a/f already exists"},
		{"create over a directory", e, "PUT", "/a/sub", "CREATE", []string{"overwrite", "true"}, true, 403,
			"org.apache.hadoop.fs.FileAlreadyExistsException", "/a/sub already exists as a directory"},
		{"create over a file being written", e, "PUT", "/a/open", "CREATE", []string{"overwrite", "true"}, true, 403,
			"org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException", "Failed to CREATE_FILE /a/open for user root because this file lease is currently owned by user root on another client..."},
		{"append to a file being written", e, "POST", "/a/open", "APPEND", nil, true, 403,
			"org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException", "Failed to APPEND_FILE /a/open for user root because this file lease is currently owned by user root on another client..."},
		{"mkdirs under a file", e, "PUT", "/a/f/x", "MKDIRS", nil, false, 403,
			"org.apache.hadoop.fs.ParentNotDirectoryException", "Parent path is not a directory: /a/f"},
		{"delete a non-empty directory", e, "DELETE", "/a", "DELETE", []string{"recursive", "false"}, false, 403,
			"org.apache.hadoop.fs.PathIsNotEmptyDirectoryException", "`/a is non empty': Directory is not empty"},
		{"past a namespace quota", e, "PUT", "/q/x", "MKDIRS", nil, false, 403,
			"org.apache.hadoop.hdfs.protocol.NSQuotaExceededException", "The NameSpace quota (directories and files) of directory /q is exceeded: quota=1 file count=2"},
		{"past a space quota", e, "PUT", "/s/f", "CREATE", nil, true, 403,
			"org.apache.hadoop.hdfs.protocol.DSQuotaExceededException", "The DiskSpace quota of /s is exceeded: quota = 1 B but diskspace consumed = ..."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, h, b := c.as.do(c.method, c.as.url(c.p, c.op, c.kv...), nil)
			if c.follow {
				if st != http.StatusTemporaryRedirect {
					t.Fatalf("step 1: %d %s, want a redirect", st, b)
				}
				st, _, b = c.as.do(c.method, h.Get("Location"), strings.NewReader("x"))
			}
			var r struct {
				RemoteException struct{ Exception, JavaClassName, Message string }
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("%d %s: %v", st, b, err)
			}
			re := r.RemoteException
			ok := re.Message == c.message
			if pre, cut := strings.CutSuffix(c.message, "..."); cut {
				ok = strings.HasPrefix(re.Message, pre)
			}
			if st != c.status || re.JavaClassName != c.class || !strings.HasSuffix(c.class, "."+re.Exception) || !ok {
				t.Fatalf("got %d %s %s %q, want %d %s %q", st, re.Exception, re.JavaClassName, re.Message, c.status, c.class, c.message)
			}
		})
	}
}
