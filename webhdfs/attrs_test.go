package webhdfs_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/webhdfs"
)

// TestXAttrOps: SETXATTR with each value encoding, GETXATTRS (named, all,
// each encoding), LISTXATTRS (names in a JSON string, as Hadoop answers),
// REMOVEXATTR, SETTIMES with accessTime in GETFILESTATUS, and TRUNCATE.
func TestXAttrOps(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	cl := e.client()
	if err := cl.WriteFile(ctxT(t), "/f", []byte("0123456789"), client.CreateOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, cl, "/f", 1)
	ok := func(method, u string) []byte {
		t.Helper()
		st, _, b := e.do(method, u, nil)
		if st != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, u, st, b)
		}
		return b
	}
	ok(http.MethodPut, e.url("/f", "SETXATTR", "xattr.name", "user.text", "xattr.value", `"blue"`, "flag", "CREATE"))
	ok(http.MethodPut, e.url("/f", "SETXATTR", "xattr.name", "USER.hex", "xattr.value", "0x00ff"))
	ok(http.MethodPut, e.url("/f", "SETXATTR", "xattr.name", "user.b64", "xattr.value", "0sAQI=", "flag", "CREATE,REPLACE"))
	ok(http.MethodPut, e.url("/f", "SETXATTR", "xattr.name", "user.text", "xattr.value", "red", "flag", "REPLACE"))
	st, _, b := e.do(http.MethodPut, e.url("/f", "SETXATTR", "xattr.name", "user.text", "xattr.value", "x", "flag", "CREATE"), nil)
	if ex, _ := remote(b); st != http.StatusForbidden || ex != "IOException" {
		t.Fatalf("CREATE of an existing attribute: %d %s", st, b)
	}

	var got webhdfs.XAttrsJSON
	decode := func(b []byte, v any) {
		t.Helper()
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	decode(ok(http.MethodGet, e.url("/f", "GETXATTRS", "encoding", "hex")), &got)
	want := map[string]string{"user.b64": "0x0102", "user.hex": "0x00ff", "user.text": "0x726564"}
	if len(got.XAttrs) != 3 {
		t.Fatalf("all, hex: %+v", got)
	}
	for _, x := range got.XAttrs {
		if x.Value == nil || *x.Value != want[x.Name] {
			t.Fatalf("all, hex: %+v", got)
		}
	}
	got = webhdfs.XAttrsJSON{}
	decode(ok(http.MethodGet, e.url("/f", "GETXATTRS", "xattr.name", "user.text", "encoding", "text")+"&xattr.name=user.b64"), &got)
	if len(got.XAttrs) != 2 || got.XAttrs[0].Name != "user.text" || *got.XAttrs[0].Value != `"red"` || *got.XAttrs[1].Value != "\"\x01\x02\"" {
		t.Fatalf("named, text: %+v", got)
	}
	got = webhdfs.XAttrsJSON{}
	decode(ok(http.MethodGet, e.url("/f", "GETXATTRS", "xattr.name", "user.hex", "encoding", "base64")), &got)
	if len(got.XAttrs) != 1 || *got.XAttrs[0].Value != "0sAP8=" {
		t.Fatalf("named, base64: %+v", got)
	}
	var names webhdfs.XAttrNamesJSON
	decode(ok(http.MethodGet, e.url("/f", "LISTXATTRS")), &names)
	if names.XAttrNames != `["user.b64","user.hex","user.text"]` {
		t.Fatalf("list: %+v", names)
	}
	ok(http.MethodPut, e.url("/f", "REMOVEXATTR", "xattr.name", "user.hex"))
	names = webhdfs.XAttrNamesJSON{}
	decode(ok(http.MethodGet, e.url("/f", "LISTXATTRS")), &names)
	if names.XAttrNames != `["user.b64","user.text"]` {
		t.Fatalf("list after remove: %+v", names)
	}

	ok(http.MethodPut, e.url("/f", "SETTIMES", "modificationtime", "1000", "accesstime", "2000"))
	ok(http.MethodPut, e.url("/f", "SETTIMES", "accesstime", "3000"))
	var fs webhdfs.FileStatusJSON
	decode(ok(http.MethodGet, e.url("/f", "GETFILESTATUS")), &fs)
	if fs.FileStatus.ModificationTime != 1000 || fs.FileStatus.AccessTime != 3000 {
		t.Fatalf("times: %+v", fs.FileStatus)
	}

	var done webhdfs.BooleanJSON
	decode(ok(http.MethodPost, e.url("/f", "TRUNCATE", "newlength", "4")), &done)
	if done.Boolean {
		t.Fatal("a truncate inside a block is done at once")
	}
	if err := cl.WaitClosed(ctxT(t), "/f"); err != nil {
		t.Fatal(err)
	}
	if st, b := e.get("/f"); st != http.StatusOK || string(b) != "0123" {
		t.Fatalf("read after truncate: %d %q", st, b)
	}
	decode(ok(http.MethodPost, e.url("/f", "TRUNCATE", "newlength", "0")), &done)
	if !done.Boolean {
		t.Fatal("a truncate to 0 is done at once")
	}
}
