package topology

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func TestParse(t *testing.T) {
	good := `# racks
dn-a1        /dc1/rack1
10.0.1.17    /dc1/rack1   # a host
10.0.2.5:9866 /dc1/rack2

dn-a1 /dc1/rack1
`
	tab, err := Parse(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, addr, want string }{
		{"dn-a1", "10.0.2.5:9866", "/dc1/rack1"}, // the id decides first
		{"dn-x", "10.0.2.5:9866", "/dc1/rack2"},  // then the address
		{"dn-x", "10.0.1.17:1234", "/dc1/rack1"}, // then the host
		{"dn-x", "10.0.9.9:1", DefaultRack},
		{"dn-x", "not an address", DefaultRack},
	} {
		if got := tab.Rack(c.id, c.addr); got != c.want {
			t.Errorf("Rack(%q, %q) = %q, want %q", c.id, c.addr, got, c.want)
		}
	}
	bad := []struct{ name, text, says string }{
		{"one field", "dn1\n", "line 1"},
		{"three fields", "ok /r\ndn1 /r x\n", "line 2"},
		{"relative rack", "dn1 rack1\n", "does not start"},
		{"root", "dn1 /\n", "does not start"},
		{"empty component", "dn1 /a//b\n", "empty"},
		{"odd character", "dn1 /a/b$c\n", "character"},
		{"too deep", "dn1 /a/b/c/d/e/f/g/h/i\n", "deeper"},
		{"two racks", "dn1 /a\ndn1 /b\n", "already"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.text))
			if errs.KindOf(err) != errs.Invalid || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want Invalid saying %q", err, c.says)
			}
		})
	}
}

// TestResolverReload: a reload takes a good file and refuses a bad one
// (or a missing one), keeping the table in force.
func TestResolverReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topology")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("dn1 /r1\n")
	r, err := NewResolver(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Rack("dn1", ""); got != "/r1" {
		t.Fatalf("loaded: %q", got)
	}
	write("dn1 /r2\n")
	if err := r.Reload(); err != nil || r.Rack("dn1", "") != "/r2" {
		t.Fatalf("reload: %v, %q", err, r.Rack("dn1", ""))
	}
	write("dn1 r3\n")
	if err := r.Reload(); errs.KindOf(err) != errs.Invalid || r.Rack("dn1", "") != "/r2" {
		t.Fatalf("bad file: %v, now %q", err, r.Rack("dn1", ""))
	}
	os.Remove(path)
	if err := r.Reload(); err == nil || r.Rack("dn1", "") != "/r2" {
		t.Fatalf("missing file: %v, now %q", err, r.Rack("dn1", ""))
	}
	if _, err := NewResolver(path); err == nil {
		t.Fatal("a missing file at start was accepted")
	}
	none, err := NewResolver("")
	if err != nil || none.Rack("dn1", "1.2.3.4:5") != DefaultRack || none.Reload() != nil {
		t.Fatalf("no file: %v", err)
	}
}
