package namespace

import (
	"bytes"
	"slices"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

var testLim = XAttrLimits{MaxPerInode: 3, MaxSize: 32}

const both = XAttrCreate | XAttrReplace

func setX(tr *Tree, c *Caller, p, name, value string, flags XAttrFlag) error {
	return tr.As(c, "SetXAttr").SetXAttr(mustPath(p), XAttr{Name: name, Value: []byte(value)}, flags, testLim)
}

func TestXAttrNames(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"user.a", "user.a"}, {"USER.a", "user.a"}, {"Trusted.X.y", "trusted.X.y"},
		{"security.z", "security.z"}, {"RAW.q", "raw.q"}, {"system.s", "system.s"},
		{"", ""}, {"user", ""}, {"user.", ""}, {"nope.a", ""}, {".a", ""},
	} {
		got, err := NormalizeXAttrName("SetXAttr", "/f", c.in)
		if c.want == "" {
			wantErr(t, err, errs.Invalid)
			continue
		}
		if err != nil || got != c.want {
			t.Fatalf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestXAttrRules is HDFS's rules, one row each: who may set, read, list
// and remove what, the flags, the limits.
func TestXAttrRules(t *testing.T) {
	tr, _ := permFixture(t)
	must(t, setX(tr, alice, "/a/f", "user.one", "1", XAttrCreate))
	must(t, setX(tr, root, "/a/f", "trusted.t", "T", XAttrCreate))
	for _, c := range []struct {
		name string
		do   func() error
		kind errs.Kind // 0: success
		sub  string
	}{
		{"create again needs REPLACE", func() error { return setX(tr, alice, "/a/f", "user.one", "x", XAttrCreate) }, errs.Exist, "REPLACE flag must be specified"},
		{"replace of a missing one needs CREATE", func() error { return setX(tr, alice, "/a/f", "user.none", "x", XAttrReplace) }, errs.NotFound, "CREATE flag must be specified"},
		{"no flag", func() error { return setX(tr, alice, "/a/f", "user.one", "x", 0) }, errs.Invalid, "A flag must be specified"},
		{"unknown flag", func() error { return setX(tr, alice, "/a/f", "user.one", "x", 4) }, errs.Invalid, "flag"},
		{"replace", func() error { return setX(tr, alice, "/a/f", "USER.one", "2", XAttrReplace) }, 0, ""},
		{"no namespace", func() error { return setX(tr, alice, "/a/f", "one", "x", both) }, errs.Invalid, "must be prefixed"},
		{"too big", func() error { return setX(tr, alice, "/a/f", "user.0123456789", "01234567890123456789012", both) }, errs.Invalid, "maximum combined size of the name and value is 32, but the total size is 33"},
		{"just fits", func() error { return setX(tr, alice, "/a/f", "user.0123456789", "0123456789012345678901", both) }, 0, ""},
		{"bob may not write", func() error { return setX(tr, bob, "/a/f", "user.b", "x", both) }, errs.Permission, "access=-w-"},
		{"trusted is the superuser's", func() error { return setX(tr, alice, "/a/f", "trusted.a", "x", both) }, errs.Permission, "User doesn't have permission for xattr: trusted.a"},
		{"system never", func() error { return setX(tr, root, "/a/f", "system.a", "x", both) }, errs.Permission, "permission for xattr"},
		{"raw never", func() error { return setX(tr, root, "/a/f", "raw.a", "x", both) }, errs.Permission, "permission for xattr"},
		{"security never", func() error { return setX(tr, root, "/a/f", "security.a", "x", both) }, errs.Permission, "permission for xattr"},
		{"unreadable takes no value", func() error { return setX(tr, alice, "/a/f", UnreadableBySuperuser, "x", both) }, errs.Permission, "Values are not allowed"},
		{"unreadable only on a file", func() error { return setX(tr, alice, "/a", UnreadableBySuperuser, "", both) }, errs.IsDir, "on a file"},
		{"missing file", func() error { return setX(tr, alice, "/a/nope", "user.a", "x", both) }, errs.NotFound, ""},
		{"limit: trusted counts", func() error { return setX(tr, alice, "/a/f", "user.four", "x", both) }, errs.Exhausted, "would exceed limit of 3"},
		{"remove missing", func() error { return tr.As(alice, "RemoveXAttr").RemoveXAttr(mustPath("/a/f"), "user.none") }, errs.NotFound, MsgXAttrRemoveNotFound},
		{"bob may not remove", func() error { return tr.As(bob, "RemoveXAttr").RemoveXAttr(mustPath("/a/f"), "user.one") }, errs.Permission, ""},
		{"alice may not remove trusted", func() error { return tr.As(alice, "RemoveXAttr").RemoveXAttr(mustPath("/a/f"), "trusted.t") }, errs.Permission, "trusted.t"},
		{"remove", func() error { return tr.As(alice, "RemoveXAttr").RemoveXAttr(mustPath("/a/f"), "user.0123456789") }, 0, ""},
		{"room again", func() error { return setX(tr, alice, "/a/f", "user.four", "4", both) }, 0, ""},
	} {
		err := c.do()
		if c.kind == 0 {
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Fatalf("%s: no error, want %v", c.name, c.kind)
		}
		wantErr(t, err, c.kind, c.sub)
	}

	get := func(c *Caller, names ...string) ([]XAttr, error) {
		return tr.As(c, "GetXAttrs").GetXAttrs(mustPath("/a/f"), names)
	}
	xs, err := get(alice)
	must(t, err)
	if !slices.EqualFunc(xs, []XAttr{{"user.four", []byte("4")}, {"user.one", []byte("2")}}, xeq) {
		t.Fatalf("alice sees %v", xs)
	}
	xs, err = get(root)
	must(t, err)
	if len(xs) != 3 || xs[0].Name != "trusted.t" {
		t.Fatalf("the superuser sees %v", xs)
	}
	if xs, err = get(bob, "user.one"); err != nil || string(xs[0].Value) != "2" {
		t.Fatalf("bob reads user.one (0644): %v %v", xs, err)
	}
	_, err = get(alice, "user.one", "user.none")
	wantErr(t, err, errs.NotFound, MsgXAttrNotFound)
	_, err = get(alice, "trusted.t")
	wantErr(t, err, errs.Permission, "trusted.t")
	_, err = get(alice, "bogus")
	wantErr(t, err, errs.Invalid)

	// /a/b/c is alice's 0700: eve cannot reach it; alice can list and read.
	must(t, setX(tr, alice, "/a/b/c", "user.d", "v", both))
	_, err = tr.As(eve, "ListXAttrs").ListXAttrs(mustPath("/a/b/c"))
	wantErr(t, err, errs.Permission)
	_, err = tr.As(eve, "GetXAttrs").GetXAttrs(mustPath("/a/b/c"), nil)
	wantErr(t, err, errs.Permission)
	ls, err := tr.As(alice, "ListXAttrs").ListXAttrs(mustPath("/a/b/c"))
	must(t, err)
	if !slices.EqualFunc(ls, []XAttr{{"user.d", []byte("v")}}, xeq) {
		t.Fatalf("list %v", ls)
	}
	// A listing without read access names the attributes, without values.
	must(t, tr.SetPermission(mustPath("/a/f"), 0600, 5))
	ls, err = tr.As(bob, "ListXAttrs").ListXAttrs(mustPath("/a/f"))
	must(t, err)
	if len(ls) != 2 || ls[0].Value != nil || ls[1].Name != "user.one" {
		t.Fatalf("bob lists %v", ls)
	}
	_, err = get(bob, "user.one")
	wantErr(t, err, errs.Permission, "access=r--")
}

func xeq(a, b XAttr) bool { return a.Name == b.Name && bytes.Equal(a.Value, b.Value) }

// TestXAttrStickyDir: on a sticky directory only its owner (or a
// superuser) changes attributes, even with write access.
func TestXAttrStickyDir(t *testing.T) {
	tr, _ := permFixture(t)
	wantErr(t, setX(tr, bob, "/tmp", "user.a", "x", both), errs.Permission, "owner")
	must(t, setX(tr, root, "/tmp", "user.a", "x", both))
	must(t, setX(tr, alice, "/a", "user.a", "x", both))
}

// TestUnreadableBySuperuser: once set, the superuser cannot read the
// file's data, and nobody removes the attribute.
func TestUnreadableBySuperuser(t *testing.T) {
	tr, _ := permFixture(t)
	if _, _, err := tr.As(root, "GetBlockLocations").File(mustPath("/a/f")); err != nil {
		t.Fatal(err)
	}
	must(t, setX(tr, alice, "/a/f", UnreadableBySuperuser, "", XAttrCreate))
	_, _, err := tr.As(root, "GetBlockLocations").File(mustPath("/a/f"))
	wantErr(t, err, errs.Permission, "superuser is not allowed")
	if _, _, err := tr.As(alice, "GetBlockLocations").File(mustPath("/a/f")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, tr.As(alice, "RemoveXAttr").RemoveXAttr(mustPath("/a/f"), UnreadableBySuperuser), errs.Permission, "can not be deleted")
	xs, err := tr.As(alice, "GetXAttrs").GetXAttrs(mustPath("/a/f"), nil)
	if err != nil || len(xs) != 1 || xs[0].Name != UnreadableBySuperuser {
		t.Fatalf("%v %v", xs, err)
	}
}

func TestSetTimes(t *testing.T) {
	tr, _ := permFixture(t)
	st := func(p string) FileInfo {
		fi, err := tr.Stat(mustPath(p))
		must(t, err)
		return fi
	}
	if fi := st("/a/f"); fi.AtimeMs != fi.MtimeMs {
		t.Fatalf("a file never set: atime %d, want its mtime %d", fi.AtimeMs, fi.MtimeMs)
	}
	if st("/a").AtimeMs != 0 {
		t.Fatal("a directory never set has atime 0")
	}
	old := st("/a/f").MtimeMs
	set := func(c *Caller, p string, m, a int64) error { return tr.As(c, "SetTimes").SetTimes(mustPath(p), m, a) }
	must(t, set(alice, "/a/f", 1000, -1))
	if fi := st("/a/f"); fi.MtimeMs != 1000 || fi.AtimeMs != old {
		t.Fatalf("mtime only: %d %d, want 1000 %d", fi.MtimeMs, fi.AtimeMs, old)
	}
	must(t, set(alice, "/a/f", -1, 2000))
	if fi := st("/a/f"); fi.MtimeMs != 1000 || fi.AtimeMs != 2000 {
		t.Fatalf("atime only: %d %d", fi.MtimeMs, fi.AtimeMs)
	}
	must(t, set(alice, "/a", 7, 8))
	if fi := st("/a"); fi.MtimeMs != 7 || fi.AtimeMs != 8 {
		t.Fatalf("dir: %d %d", fi.MtimeMs, fi.AtimeMs)
	}
	wantErr(t, set(bob, "/a/f", 1, 1), errs.Permission, "access=-w-")
	must(t, set(root, "/a/f", 3000, 3000))
	wantErr(t, set(alice, "/a/f", -2, 1), errs.Invalid)
	wantErr(t, set(alice, "/a/nope", 1, 1), errs.NotFound)
	must(t, set(alice, "/a/f", -1, -1))
	if fi := st("/a/f"); fi.MtimeMs != 3000 || fi.AtimeMs != 3000 {
		t.Fatalf("-1 -1 changed something: %d %d", fi.MtimeMs, fi.AtimeMs)
	}
}

// TestAttrsImage: attributes and access times survive the image, are in
// the hash, and a damaged ATTRS record is refused.
func TestAttrsImage(t *testing.T) {
	tr, _ := permFixture(t)
	h0 := tr.Hash()
	must(t, tr.SetQuota(mustPath("/a"), 100, -1))
	must(t, setX(tr, alice, "/a", "user.dir", "d", both))
	must(t, setX(tr, alice, "/a/f", "user.b", "\x00\xff", both))
	must(t, setX(tr, root, "/a/f", "trusted.a", "", both))
	must(t, tr.As(alice, "SetTimes").SetTimes(mustPath("/a/b"), -1, 42))
	h1 := tr.Hash()
	if h1 == h0 {
		t.Fatal("attributes are not in the hash")
	}
	img := image(t, tr)
	back, err := ReadImage(bytes.NewReader(img))
	must(t, err)
	checkInvariants(t, back)
	if back.Hash() != h1 || !bytes.Equal(image(t, back), img) {
		t.Fatal("round trip changed the image")
	}
	xs, err := back.As(root, "GetXAttrs").GetXAttrs(mustPath("/a/f"), nil)
	if err != nil || !slices.EqualFunc(xs, []XAttr{{"trusted.a", []byte{}}, {"user.b", []byte("\x00\xff")}}, xeq) {
		t.Fatalf("after the image: %q %v", xs, err)
	}
	if fi, _ := back.Stat(mustPath("/a/b")); fi.AtimeMs != 42 {
		t.Fatalf("atime %d after the image", fi.AtimeMs)
	}
	must(t, tr.As(alice, "RemoveXAttr").RemoveXAttr(mustPath("/a/f"), "user.b"))
	if tr.Hash() == h1 {
		t.Fatal("a removal is not in the hash")
	}
	for n := 0; n < len(img); n += 7 {
		_, err := ReadImage(bytes.NewReader(img[:n]))
		wantErr(t, err, errs.Corrupt)
	}

	for _, c := range []struct {
		name string
		a    *attrs
		sub  string
	}{
		{"out of order", &attrs{xattrs: []XAttr{{"user.b", nil}, {"user.a", nil}}}, "out of order"},
		{"bad name", &attrs{xattrs: []XAttr{{"USER.a", nil}}}, "bad attribute name"},
		{"empty", &attrs{}, "empty record"},
		{"too big", &attrs{xattrs: []XAttr{{"user.a", make([]byte, CapXAttrSize)}}}, "over"},
	} {
		bad, _ := permFixture(t)
		n := bad.inodes.get(bad.root.id)
		n.extForWrite().attrs = c.a
		_, err := ReadImage(bytes.NewReader(image(t, bad)))
		wantErr(t, err, errs.Corrupt, c.sub)
	}
}
