package webhdfs_test

import (
	"bytes"
	"hash/crc32"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/client"
)

// appendTo sends data through both steps of APPEND and returns the final
// status and body.
func (e *env) appendTo(p string, data []byte, kv ...string) (int, []byte) {
	e.t.Helper()
	st, h, b := e.do(http.MethodPost, e.url(p, "APPEND", kv...), nil)
	if st != http.StatusTemporaryRedirect {
		return st, b
	}
	st, _, b = e.do(http.MethodPost, h.Get("Location"), bytes.NewReader(data))
	return st, b
}

// TestAppendRoundTrip: APPEND through both steps, under simple auth and
// mTLS, puts the bytes after the file's (a new block each time: NEW_BLOCK)
// and the file reads back exactly, over WebHDFS and the Go client, with the
// CRC32C of all its bytes as its checksum. Hadoop's clients (fsspec) send
// every chunk of a write to the one datanode URL, a CREATE's with its op
// changed to APPEND: the datanode admits those repeated APPENDs.
func TestAppendRoundTrip(t *testing.T) {
	for _, mtls := range []bool{false, true} {
		t.Run(map[bool]string{false: "simple", true: "mtls"}[mtls], func(t *testing.T) {
			e := startEnv(t, 1, mtls, "root")
			cl := e.client()
			ctx := ctxT(t)
			want := pattern(3000)
			if st, b := e.put("/f", want, "blocksize", "1024"); st != http.StatusCreated {
				t.Fatalf("create: %d %s", st, b)
			}
			for _, n := range []int{100, 2500, 0} {
				more := pattern(n + 7)[7:]
				if st, b := e.appendTo("/f", more, "buffersize", "4096"); st != http.StatusOK {
					t.Fatalf("append %d bytes: %d %s", n, st, b)
				}
				want = append(want, more...)
			}
			if st, b := e.get("/f"); st != 200 || !bytes.Equal(b, want) {
				t.Fatalf("OPEN after appends: %d, %d bytes, want %d", st, len(b), len(want))
			}
			if st, b := e.get("/f", "offset", "2990", "length", "120"); st != 200 || !bytes.Equal(b, want[2990:3110]) {
				t.Fatalf("OPEN across the short block: %d, %d bytes", st, len(b))
			}
			got, err := cl.ReadFile(ctx, "/f")
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Go client reads %d bytes (%v), want %d", len(got), err, len(want))
			}
			sum, err := cl.FileChecksum(ctx, "/f")
			if crc := crc32.Checksum(want, crc32.MakeTable(crc32.Castagnoli)); err != nil || sum.CRC != crc {
				t.Fatalf("checksum %+v %v, want %08x", sum, err, crc)
			}

			// fsspec's writer: CREATE an empty file, then POST each chunk
			// to the CREATE's datanode URL with op=APPEND.
			st, h, b := e.do(http.MethodPut, e.url("/fs", "CREATE", "overwrite", "true"), nil)
			if st != http.StatusTemporaryRedirect {
				t.Fatalf("create step 1: %d %s", st, b)
			}
			loc := h.Get("Location")
			if st, _, b := e.do(http.MethodPut, loc, nil); st != http.StatusCreated {
				t.Fatalf("create step 2: %d %s", st, b)
			}
			u, err := url.Parse(loc)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			q.Set("op", "APPEND")
			u.RawQuery = q.Encode()
			var chunks []byte
			for i := range 3 {
				c := pattern(700 + i)
				if st, _, b := e.do(http.MethodPost, u.String(), bytes.NewReader(c)); st != http.StatusOK {
					t.Fatalf("chunk %d: %d %s", i, st, b)
				}
				chunks = append(chunks, c...)
			}
			if got, err := cl.ReadFile(ctx, "/fs"); err != nil || !bytes.Equal(got, chunks) {
				t.Fatalf("fsspec-style write reads %d bytes (%v), want %d", len(got), err, len(chunks))
			}
		})
	}
}

// TestAppendTokenMisuse: an APPEND redirect token works only on its
// datanode, for its path and user, and only for APPEND; the file it names
// must still be the one the namenode checked.
func TestAppendTokenMisuse(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	cl := e.client()
	ctx := ctxT(t)
	for _, p := range []string{"/a", "/b"} {
		if err := cl.WriteFile(ctx, p, []byte(p+p), client.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	location := func(p string) *url.URL {
		t.Helper()
		st, h, b := e.do(http.MethodPost, e.url(p, "APPEND"), nil)
		if st != http.StatusTemporaryRedirect {
			t.Fatalf("APPEND %s: %d %s", p, st, b)
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
	cases := []struct {
		name   string
		method string
		url    func() string
		status int
		ex     string
	}{
		{"other file", "POST", func() string { return edit(location("/a"), func(url.Values) {}, "/b") }, 403, "InvalidToken"},
		{"as a create", "PUT", func() string { return edit(location("/a"), func(q url.Values) { q.Set("op", "CREATE") }, "") }, 403, "InvalidToken"},
		{"as an open", "GET", func() string { return edit(location("/a"), func(q url.Values) { q.Set("op", "OPEN") }, "") }, 403, "InvalidToken"},
		{"other user", "POST", func() string { return edit(location("/a"), func(q url.Values) { q.Set("user.name", "eve") }, "") }, 403, "InvalidToken"},
		{"no token", "POST", func() string { return edit(location("/a"), func(q url.Values) { q.Del("blockfs.token") }, "") }, 403, "InvalidToken"},
		{"file replaced", "POST", func() string {
			u := location("/a")
			if err := cl.WriteFile(ctx, "/a", []byte("/a/a"), client.CreateOptions{Overwrite: true}); err != nil {
				t.Fatal(err)
			}
			return u.String()
		}, 404, "FileNotFoundException"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _, b := e.do(c.method, c.url(), strings.NewReader("zzzz"))
			ex, ok := remote(b)
			if st != c.status || !ok || ex != c.ex {
				t.Fatalf("got %d %s, want %d %s", st, b, c.status, c.ex)
			}
			for p, want := range map[string]string{"/a": "/a/a", "/b": "/b/b"} {
				if got, err := cl.ReadFile(ctx, p); err != nil || string(got) != want {
					t.Fatalf("%s changed: %q %v", p, got, err)
				}
			}
		})
	}
}
