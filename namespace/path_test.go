package namespace

import (
	"strings"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func TestValidatePath(t *testing.T) {
	l := Limits{MaxPathLen: 40, MaxComponentLen: 10}
	ok := []string{"/", "/a", "/a/b", "/a b/c", "/.a/..b/...", "/" + strings.Repeat("x", 10), "/" + strings.Repeat("a/", 19) + "b"}
	for _, p := range ok {
		if err := ValidatePath(p, l); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	bad := []struct{ p, msg string }{
		{"", "empty path"},
		{"a/b", "not absolute"},
		{"/" + strings.Repeat("a/", 20) + "b", "path too long"},
		{"/a\x00b", "NUL byte"},
		{"/a\xffb", "not valid UTF-8"},
		{"//", "empty path component"},
		{"/a//b", "empty path component"},
		{"/a/", "empty path component"},
		{"/a/.", `"." not allowed`},
		{"/../a", `".." not allowed`},
		{"/" + strings.Repeat("x", 11), "component too long"},
	}
	distinct := map[string]bool{}
	for _, c := range bad {
		err := ValidatePath(c.p, l)
		wantErr(t, err, errs.Invalid, c.msg)
		distinct[c.msg] = true
	}
	if len(distinct) != 9 {
		t.Fatalf("want 9 distinct failure messages, have %d", len(distinct))
	}
	// Zero limits mean the defaults.
	if err := ValidatePath("/"+strings.Repeat("x", 255), Limits{}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, ValidatePath("/"+strings.Repeat("x", 256), Limits{}), errs.Invalid, "component too long")
}

func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"", "/", "/a", "a", "//", "/a/", "/a/./b", "/a/../b", "/a\x00", "/" + strings.Repeat("y", 300), "/é/ü"} {
		f.Add(s)
	}
	l := DefaultLimits()
	f.Fuzz(func(t *testing.T, p string) {
		err := ValidatePath(p, l)
		// Independent oracle.
		valid := p == "/" || (strings.HasPrefix(p, "/") && len(p) <= l.MaxPathLen && !strings.Contains(p, "\x00") && func() bool {
			for _, c := range strings.Split(p[1:], "/") {
				if c == "" || c == "." || c == ".." || len(c) > l.MaxComponentLen {
					return false
				}
			}
			return true
		}())
		if valid != (err == nil) {
			t.Fatalf("ValidatePath(%q) = %v, oracle says valid=%v", p, err, valid)
		}
		if err != nil && errs.KindOf(err) != errs.Invalid {
			t.Fatalf("kind %v", errs.KindOf(err))
		}
		if err == nil {
			// A valid path resolves without panicking in a tree.
			tr := New(l, "u", "g")
			_ = tr.Mkdirs(p, MkdirsOpts{Perm: 0755, Parents: true})
			if _, err := tr.Stat(p); err != nil {
				t.Fatalf("stat after mkdirs %q: %v", p, err)
			}
		}
	})
}
