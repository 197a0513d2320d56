package webhdfs_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/client"
)

// snapshot lists every inode under / with what a refusal must not change.
func snapshot(t *testing.T, cl *client.Client) string {
	t.Helper()
	ctx := ctxT(t)
	var b strings.Builder
	var walk func(p string)
	walk = func(p string) {
		for st, err := range cl.List(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %o %s:%s %d %d %v\n", st.Path, st.Mode, st.Owner, st.Group, st.Length, st.MtimeUnixMs, st.UnderConstruction)
			if st.IsDir {
				walk(st.Path)
			}
		}
	}
	walk("/")
	return b.String()
}

// TestRefusals: bad input and refused operations get Hadoop's
// RemoteException body with the exception and status Hadoop gives them,
// change nothing in the namespace, and leave the servers serving.
func TestRefusals(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	cl := e.client()
	ctx := ctxT(t)
	if err := cl.Mkdirs(ctx, "/a/sub", 0o755, true); err != nil {
		t.Fatal(err)
	}
	if err := cl.WriteFile(ctx, "/a/f", []byte("data"), client.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, cl, "/a/f", 1)
	// /a/open is held open by a writer that never closes it.
	if _, err := cl.Create(ctx, "/a/open", client.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, cl)
	nn := e.nn + "/webhdfs/v1"
	as := func(user, p, op string, kv ...string) string {
		q := url.Values{"op": {op}}
		if user != "" {
			q.Set("user.name", user)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return nn + p + "?" + q.Encode()
	}
	root := func(p, op string, kv ...string) string { return as("root", p, op, kv...) }
	long := "/" + strings.Repeat("x", 300)
	// A case with follow refuses at the datanode: the namenode's first
	// step redirects (it decides no rule of the core), and the core's
	// Create or Append, called by the datanode before it stores a byte,
	// refuses with the status and exception the first step once did.
	const follow = true
	cases := []struct {
		name   string
		method string
		url    string
		status int
		ex     string
		follow bool
	}{
		{"unknown op", "GET", root("/a", "FOO"), 400, "IllegalArgumentException", false},
		{"no op", "GET", nn + "/a?user.name=root", 400, "IllegalArgumentException", false},
		{"op under another method", "PUT", root("/a", "GETFILESTATUS"), 400, "IllegalArgumentException", false},
		{"APPEND under PUT", "PUT", root("/a/f", "APPEND"), 400, "IllegalArgumentException", false},
		{"append to a directory", "POST", root("/a/sub", "APPEND"), 404, "FileNotFoundException", follow},
		{"append to a missing file", "POST", root("/a/none", "APPEND"), 404, "FileNotFoundException", false},
		{"append to a file being written", "POST", root("/a/open", "APPEND"), 403, "AlreadyBeingCreatedException", follow},
		{"append with a bad buffer size", "POST", root("/a/f", "APPEND", "buffersize", "0"), 400, "IllegalArgumentException", false},
		{"SETREPLICATION", "PUT", root("/a/f", "SETREPLICATION", "replication", "2"), 400, "UnsupportedOperationException", false},
		{"truncate to a larger size", "POST", root("/a/f", "TRUNCATE", "newlength", "1000000"), 400, "IllegalArgumentException", false},
		{"truncate without newlength", "POST", root("/a/f", "TRUNCATE"), 400, "IllegalArgumentException", false},
		{"truncate of a directory", "POST", root("/a/sub", "TRUNCATE", "newlength", "0"), 404, "FileNotFoundException", false},
		{"xattr without a namespace", "PUT", root("/a/f", "SETXATTR", "xattr.name", "color", "xattr.value", "x"), 400, "IllegalArgumentException", false},
		{"xattr bad flag", "PUT", root("/a/f", "SETXATTR", "xattr.name", "user.a", "flag", "MAYBE"), 400, "IllegalArgumentException", false},
		{"xattr bad hex", "PUT", root("/a/f", "SETXATTR", "xattr.name", "user.a", "xattr.value", "0xzz"), 400, "IllegalArgumentException", false},
		{"missing xattr", "GET", root("/a/f", "GETXATTRS", "xattr.name", "user.none"), 403, "IOException", false},
		{"remove missing xattr", "PUT", root("/a/f", "REMOVEXATTR", "xattr.name", "user.none"), 403, "IOException", false},
		{"xattr bad encoding", "GET", root("/a/f", "GETXATTRS", "encoding", "rot13"), 400, "IllegalArgumentException", false},
		{"settimes before the epoch", "PUT", root("/a/f", "SETTIMES", "modificationtime", "-2"), 400, "IllegalArgumentException", false},
		{"CONCAT", "POST", root("/a/f", "CONCAT", "sources", "/a/g"), 400, "UnsupportedOperationException", false},
		{"malformed boolean", "DELETE", root("/a", "DELETE", "recursive", "maybe"), 400, "IllegalArgumentException", false},
		{"malformed permission", "PUT", root("/a/new", "MKDIRS", "permission", "999"), 400, "IllegalArgumentException", false},
		{"permission too large", "PUT", root("/a", "SETPERMISSION", "permission", "7777"), 400, "IllegalArgumentException", false},
		{"negative offset", "GET", root("/a/f", "OPEN", "offset", "-1"), 400, "IllegalArgumentException", false},
		{"offset not a number", "GET", root("/a/f", "GETFILEBLOCKLOCATIONS", "offset", "ten"), 400, "IllegalArgumentException", false},
		{"negative length", "GET", root("/a/f", "OPEN", "length", "-5"), 400, "IllegalArgumentException", false},
		{"rename without destination", "PUT", root("/a/f", "RENAME"), 400, "IllegalArgumentException", false},
		{"relative destination", "PUT", root("/a/f", "RENAME", "destination", "a/g"), 400, "InvalidPathException", false},
		{"NUL in path", "GET", nn + "/a%00b?op=GETFILESTATUS&user.name=root", 400, "InvalidPathException", false},
		{"component too long", "PUT", root(long, "MKDIRS"), 400, "InvalidPathException", false},
		{"bad block size", "PUT", root("/a/g", "CREATE", "blocksize", "1"), 400, "IllegalArgumentException", follow},
		{"zero block size", "PUT", root("/a/g", "CREATE", "blocksize", "0"), 400, "IllegalArgumentException", false},
		{"bad replication", "PUT", root("/a/g", "CREATE", "replication", "0"), 400, "IllegalArgumentException", false},
		{"setowner without owner or group", "PUT", root("/a/f", "SETOWNER"), 400, "IllegalArgumentException", false},
		{"no user", "GET", nn + "/a?op=GETFILESTATUS", 401, "SecurityException", false},
		{"bad user name", "GET", as("a%b", "/a", "GETFILESTATUS"), 401, "SecurityException", false},
		{"proxy user", "GET", root("/a", "GETFILESTATUS", "doas", "bob"), 403, "AccessControlException", false},
		{"stat missing", "GET", root("/nope", "GETFILESTATUS"), 404, "FileNotFoundException", false},
		{"list missing", "GET", root("/nope", "LISTSTATUS"), 404, "FileNotFoundException", false},
		{"open a directory", "GET", root("/a", "OPEN"), 404, "FileNotFoundException", false},
		{"checksum of a directory", "GET", root("/a", "GETFILECHECKSUM"), 404, "FileNotFoundException", false},
		{"open past the end", "GET", root("/a/f", "OPEN", "offset", "5"), 403, "EOFException", false},
		{"block locations past the end", "GET", root("/a/f", "GETFILEBLOCKLOCATIONS", "offset", "5"), 400, "IllegalArgumentException", false},
		{"create over a file", "PUT", root("/a/f", "CREATE"), 403, "FileAlreadyExistsException", follow},
		{"create over a directory", "PUT", root("/a/sub", "CREATE", "overwrite", "true"), 403, "FileAlreadyExistsException", follow},
		{"create without parent", "PUT", root("/b/c", "CREATE", "createparent", "false"), 404, "FileNotFoundException", follow},
		{"delete a non-empty directory", "DELETE", root("/a", "DELETE"), 403, "PathIsNotEmptyDirectoryException", false},
		{"rename under a file", "PUT", root("/a/sub", "RENAME", "destination", "/a/f/x"), 403, "ParentNotDirectoryException", false},
		{"mkdirs without permission", "PUT", as("eve", "/a/x", "MKDIRS"), 403, "AccessControlException", false},
		{"delete without permission", "DELETE", as("eve", "/a/f", "DELETE"), 403, "AccessControlException", false},
		{"chmod by a non-owner", "PUT", as("eve", "/a/f", "SETPERMISSION", "permission", "777"), 403, "AccessControlException", false},
		{"chown by a non-superuser", "PUT", as("eve", "/a/f", "SETOWNER", "owner", "eve"), 403, "AccessControlException", false},
		{"rename without permission", "PUT", as("eve", "/a/f", "RENAME", "destination", "/a/g"), 403, "AccessControlException", false},
		{"truncate without permission", "POST", as("eve", "/a/f", "TRUNCATE", "newlength", "0"), 403, "AccessControlException", false},
		{"settimes without permission", "PUT", as("eve", "/a/f", "SETTIMES", "modificationtime", "5"), 403, "AccessControlException", false},
		{"setxattr without permission", "PUT", as("eve", "/a/f", "SETXATTR", "xattr.name", "user.a"), 403, "AccessControlException", false},
		{"trusted xattr by a user", "PUT", as("eve", "/a/f", "SETXATTR", "xattr.name", "trusted.a"), 403, "AccessControlException", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, h, b := e.do(c.method, c.url, nil)
			if c.follow {
				if st != http.StatusTemporaryRedirect {
					t.Fatalf("step 1: %d %s, want a redirect", st, b)
				}
				st, _, b = e.do(c.method, h.Get("Location"), strings.NewReader("x"))
			}
			ex, ok := remote(b)
			if st != c.status || !ok || ex != c.ex {
				t.Fatalf("got %d %s, want %d %s", st, b, c.status, c.ex)
			}
			if after := snapshot(t, cl); after != before {
				t.Fatalf("namespace changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
	// CREATE's first step cannot check w on the parent without changing
	// anything; the datanode's Create refuses it before storing a byte.
	t.Run("create without permission", func(t *testing.T) {
		st, h, b := e.do("PUT", as("eve", "/a/g", "CREATE"), nil)
		if st != http.StatusTemporaryRedirect {
			t.Fatalf("step 1: %d %s", st, b)
		}
		st, _, b = e.do("PUT", h.Get("Location"), strings.NewReader("x"))
		if ex, _ := remote(b); st != 403 || ex != "AccessControlException" {
			t.Fatalf("step 2: %d %s", st, b)
		}
		if after := snapshot(t, cl); after != before {
			t.Fatalf("namespace changed:\n%s\nwas\n%s", after, before)
		}
	})
	// APPEND's first step checks the walk and the file; w on it is
	// checked by the datanode's Append, before a byte is stored.
	t.Run("append without permission", func(t *testing.T) {
		st, h, b := e.do("POST", as("eve", "/a/f", "APPEND"), nil)
		if st != http.StatusTemporaryRedirect {
			t.Fatalf("step 1: %d %s", st, b)
		}
		st, _, b = e.do("POST", h.Get("Location"), strings.NewReader("x"))
		if ex, _ := remote(b); st != 403 || ex != "AccessControlException" {
			t.Fatalf("step 2: %d %s", st, b)
		}
		if after := snapshot(t, cl); after != before {
			t.Fatalf("namespace changed:\n%s\nwas\n%s", after, before)
		}
	})
	if st, _, b := e.do("GET", root("/a/f", "OPEN"), nil); st != http.StatusTemporaryRedirect {
		t.Fatalf("the namenode stopped serving: %d %s", st, b)
	}
}
