package webhdfs_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/client"
)

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}

// TestCreateOpenRoundTrip: CREATE and OPEN through both steps, under
// simple auth and under mTLS (client certificates on both HTTP ports),
// byte-identical to what the Go client reads and writes; ranges, the
// parameters CREATE fixes, and createparent.
func TestCreateOpenRoundTrip(t *testing.T) {
	for _, mtls := range []bool{false, true} {
		t.Run(map[bool]string{false: "simple", true: "mtls"}[mtls], func(t *testing.T) {
			e := startEnv(t, 1, mtls, "root")
			cl := e.client()
			ctx := ctxT(t)
			data := pattern(5000)
			st, b := e.put("/new/dir/f", data, "blocksize", "2048", "replication", "2", "permission", "600")
			if st != http.StatusCreated {
				t.Fatalf("create: %d %s", st, b)
			}
			got, err := cl.ReadFile(ctx, "/new/dir/f")
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Go client reads %d bytes (%v), want the %d written", len(got), err, len(data))
			}
			fst, err := cl.Stat(ctx, "/new/dir/f")
			if err != nil || fst.BlockSize != 2048 || fst.Replication != 2 || fst.Mode != 0o600 || fst.Owner != "root" {
				t.Fatalf("stat %v %v", fst, err)
			}
			if err := cl.WriteFile(ctx, "/g", pattern(3000)[1000:], client.CreateOptions{BlockSize: 1024}); err != nil {
				t.Fatal(err)
			}
			waitReplicas(t, cl, "/g", 1)
			for _, c := range []struct {
				kv   []string
				want []byte
			}{
				{nil, pattern(3000)[1000:]},
				{[]string{"offset", "1500"}, pattern(3000)[2500:]},
				{[]string{"offset", "100", "length", "1100"}, pattern(3000)[1100:2200]},
				{[]string{"offset", "1999", "length", "50"}, pattern(3000)[2999:]},
				{[]string{"offset", "2000"}, []byte{}},
				{[]string{"length", "0"}, []byte{}},
			} {
				st, b := e.get("/g", c.kv...)
				if st != 200 || !bytes.Equal(b, c.want) {
					t.Errorf("OPEN %v: %d, %d bytes, want %d", c.kv, st, len(b), len(c.want))
				}
			}
			st, b = e.put("/g", []byte("x"), "overwrite", "true")
			if st != http.StatusCreated {
				t.Fatalf("overwrite: %d %s", st, b)
			}
			if st, b := e.get("/g"); st != 200 || string(b) != "x" {
				t.Fatalf("read after overwrite: %d %q", st, b)
			}
			st, b = e.put("/empty", nil)
			if st != http.StatusCreated {
				t.Fatalf("empty create: %d %s", st, b)
			}
			if st, b := e.get("/empty"); st != 200 || len(b) != 0 {
				t.Fatalf("read empty: %d %q", st, b)
			}
			// noredirect=true answers the datanode URL in JSON instead.
			st, _, b = e.do("GET", e.url("/g", "OPEN", "noredirect", "true"), nil)
			if v := jsonOf(t, b); st != 200 || !strings.Contains(v["Location"].(string), "op=OPEN") {
				t.Fatalf("noredirect: %d %s", st, b)
			}
		})
	}
}

// TestRedirectTokenMisuse: a redirect URL works once, for its file, op and
// user only, and a tampered one not at all; each refusal is Hadoop's
// InvalidToken body with 403 and changes nothing.
func TestRedirectTokenMisuse(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	cl := e.client()
	ctx := ctxT(t)
	if err := cl.WriteFile(ctx, "/a", []byte("aaaa"), client.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cl.WriteFile(ctx, "/b", []byte("bbbb"), client.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, cl, "/a", 1)
	location := func(p, op string, kv ...string) *url.URL {
		t.Helper()
		method := "GET"
		if op == "CREATE" {
			method = "PUT"
		}
		st, h, b := e.do(method, e.url(p, op, kv...), nil)
		if st != http.StatusTemporaryRedirect {
			t.Fatalf("%s %s: %d %s", op, p, st, b)
		}
		u, err := url.Parse(h.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	edit := func(u *url.URL, f func(q url.Values), path string) string {
		q := u.Query()
		f(q)
		v := *u
		v.RawQuery = q.Encode()
		if path != "" {
			v.Path = "/webhdfs/v1" + path
		}
		return v.String()
	}
	used := location("/a", "OPEN")
	if st, _, b := e.do("GET", used.String(), nil); st != 200 || string(b) != "aaaa" {
		t.Fatalf("first use: %d %q", st, b)
	}
	// A URL refused for asking another range does not spend its token:
	// the range it was signed for is still served once.
	signed := location("/a", "OPEN", "offset", "1")
	if st, _, b := e.do("GET", edit(signed, func(q url.Values) { q.Set("offset", "0") }, ""), nil); st != 403 {
		t.Fatalf("other range: %d %s", st, b)
	}
	if st, _, b := e.do("GET", signed.String(), nil); st != 200 || string(b) != "aaa" {
		t.Fatalf("the signed range after a refused one: %d %q", st, b)
	}
	tok := func(u *url.URL) string { return u.Query().Get("blockfs.token") }
	flip := func(s string) string { // one byte of the payload changed
		i := strings.IndexByte(s, '.') + 5
		c := byte('A')
		if s[i] == 'A' {
			c = 'B'
		}
		return s[:i] + string(c) + s[i+1:]
	}
	cases := []struct {
		name   string
		method string
		url    func() string
		body   string
		status int
		ex     string
	}{
		{"reused", "GET", func() string { return used.String() }, "", 403, "InvalidToken"},
		{"other file", "GET", func() string { return edit(location("/a", "OPEN"), func(url.Values) {}, "/b") }, "", 403, "InvalidToken"},
		{"other op", "PUT", func() string {
			return edit(location("/a", "OPEN"), func(q url.Values) { q.Set("op", "CREATE") }, "")
		}, "zzzz", 403, "InvalidToken"},
		{"open token for a create of the same path", "PUT", func() string {
			u := location("/a", "OPEN")
			return edit(location("/a", "CREATE", "overwrite", "true"), func(q url.Values) { q.Set("blockfs.token", tok(u)) }, "")
		}, "zzzz", 403, "InvalidToken"},
		{"tampered", "GET", func() string {
			u := location("/a", "OPEN")
			return edit(u, func(q url.Values) { q.Set("blockfs.token", flip(tok(u))) }, "")
		}, "", 403, "InvalidToken"},
		{"no token", "GET", func() string { return edit(location("/a", "OPEN"), func(q url.Values) { q.Del("blockfs.token") }, "") }, "", 403, "InvalidToken"},
		{"other user", "GET", func() string {
			return edit(location("/a", "OPEN"), func(q url.Values) { q.Set("user.name", "eve") }, "")
		}, "", 403, "InvalidToken"},
		{"other range", "GET", func() string {
			return edit(location("/a", "OPEN", "offset", "1"), func(q url.Values) { q.Set("offset", "0") }, "")
		}, "", 403, "InvalidToken"},
		{"other datanode", "GET", func() string {
			u := location("/a", "OPEN")
			for i := range e.c.Datanodes() {
				if a := e.c.Datanode(i).HTTPAddr(); a != u.Host {
					u.Host = a
					break
				}
			}
			return u.String()
		}, "", 403, "InvalidToken"},
		{"unknown op at a datanode", "GET", func() string {
			return edit(location("/a", "OPEN"), func(q url.Values) { q.Set("op", "GETFILESTATUS") }, "")
		}, "", 400, "IllegalArgumentException"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body *strings.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			var st int
			var b []byte
			if body != nil {
				st, _, b = e.do(c.method, c.url(), body)
			} else {
				st, _, b = e.do(c.method, c.url(), nil)
			}
			ex, ok := remote(b)
			if st != c.status || !ok || ex != c.ex {
				t.Fatalf("got %d %s, want %d %s", st, b, c.status, c.ex)
			}
			for p, want := range map[string]string{"/a": "aaaa", "/b": "bbbb"} {
				if got, err := cl.ReadFile(ctx, p); err != nil || string(got) != want {
					t.Fatalf("%s changed: %q %v", p, got, err)
				}
			}
		})
	}
}
