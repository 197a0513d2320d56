package namespace

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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
		pp, err := l.ParsePath(p)
		// Independent oracle.
		valid := p == "/" || (strings.HasPrefix(p, "/") && len(p) <= l.MaxPathLen && !strings.Contains(p, "\x00") && utf8.ValidString(p) && func() bool {
			for _, c := range strings.Split(p[1:], "/") {
				if c == "" || c == "." || c == ".." || len(c) > l.MaxComponentLen {
					return false
				}
			}
			return true
		}())
		if valid != (err == nil) {
			t.Fatalf("ParsePath(%q) = %v, oracle says valid=%v", p, err, valid)
		}
		if err != nil && errs.KindOf(err) != errs.Invalid {
			t.Fatalf("kind %v", errs.KindOf(err))
		}
		if err != nil && !pp.IsZero() {
			t.Fatalf("ParsePath(%q) failed but returned %q", p, pp)
		}
		if err == nil {
			if pp.String() != p {
				t.Fatalf("ParsePath(%q).String() = %q", p, pp)
			}
			// The components, rejoined, are the path.
			var b strings.Builder
			for c := range pp.Components() {
				b.WriteString("/" + c)
			}
			if got := b.String(); got != p && !(p == "/" && got == "") {
				t.Fatalf("components of %q rejoin to %q", p, got)
			}
			// A valid path resolves without panicking in a tree.
			tr := New(l, "u", "g")
			_ = tr.Mkdirs(pp, MkdirsOpts{Perm: 0755, Parents: true})
			if _, err := tr.Stat(pp); err != nil {
				t.Fatalf("stat after mkdirs %q: %v", p, err)
			}
		}
	})
}

func TestParsePath(t *testing.T) {
	p, err := ParsePath("/a/bc/d")
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != "/a/bc/d" || p.Base() != "d" || p.Parent().String() != "/a/bc" || p.IsRoot() || p.IsZero() {
		t.Fatalf("accessors of %q wrong: base %q parent %q", p, p.Base(), p.Parent())
	}
	if got := slices.Collect(p.Components()); !slices.Equal(got, []string{"a", "bc", "d"}) {
		t.Fatalf("components %q", got)
	}
	root, _ := ParsePath("/")
	if !root.IsRoot() || root.Parent() != root || root.Base() != "" || slices.Collect(root.Components()) != nil {
		t.Fatalf("root accessors wrong")
	}
	if q, _ := ParsePath("/a"); q.Parent() != root {
		t.Fatalf("parent of /a is %q", q.Parent())
	}
	// The zero Path is no path: its accessors are safe and every lookup
	// refuses it.
	var zero Path
	if !zero.IsZero() || zero.String() != "" || zero.Base() != "" || !zero.Parent().IsZero() || slices.Collect(zero.Components()) != nil {
		t.Fatal("zero Path accessors wrong")
	}
	tr := fixture(t)
	_, err = tr.Stat(zero)
	wantErr(t, err, errs.Invalid, "empty path")
	wantErr(t, tr.Mkdirs(zero, MkdirsOpts{Perm: 0755}), errs.Invalid, "empty path")
	wantErr(t, tr.As(nil, "Op").CheckWrite(zero), errs.Invalid, "Op: empty path")
	wantErr(t, tr.Rename(mustPath("/x"), zero, 1), errs.Invalid, "empty path")
	// A Path parsed under larger limits than the tree's is refused as the
	// tree's limits would refuse it, without rescanning.
	small := New(Limits{MaxPathLen: 40, MaxComponentLen: 10}, "u", "g")
	_, err = small.Stat(mustPath("/" + strings.Repeat("x", 11)))
	wantErr(t, err, errs.Invalid, "component too long: 11 bytes, limit 10")
	_, err = small.Stat(mustPath("/" + strings.Repeat("a/", 20) + "b"))
	wantErr(t, err, errs.Invalid, "path too long")
	// Errors name their op: ParsePath's own until a caller sets it.
	_, err = ParsePath("a")
	wantErr(t, err, errs.Invalid, "namespace.ParsePath a: path is not absolute")
}
