package fsm

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// TestRedirectNonceSpentOnce: a Create carrying a CREATE redirect token's
// nonce spends it; another Create with it is refused (Permission, the
// namespace unchanged) until the token expires by the commands' clock, on
// a node restored from a snapshot too. A Create the namespace refuses
// leaves the nonce unspent.
func TestRedirectNonceSpentOnce(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	alice := &api.Caller{User: "root", ClientId: "dn-door"}
	create := func(f *FSM, path, nonce string, overwrite bool, now int64) *api.CommandResult {
		return permApply(t, f, CmdCreate, &api.CreateCommand{Caller: alice, Path: path, Perm: 0o644, Replication: 1, BlockSize: 1024,
			Overwrite: overwrite, MtimeUnixMs: now, RedirectNonce: nonce, RedirectExpiresUnixMs: 60_000})
	}
	if r := create(f, "/a", "", false, 1); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	// Refused by the namespace (exists, no overwrite): n1 stays unspent.
	if r := create(f, "/a", "n1", false, 2); permKind(r) != errs.Exist {
		t.Fatalf("create over an existing file: %v", r)
	}
	if r := create(f, "/a", "n1", true, 3); r.ErrorMsg != "" {
		t.Fatalf("first use of n1: %v", r.ErrorMsg)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	data := snapshotBytes(t, snap)
	g := New(Config{Superuser: "root", Supergroup: "supergroup"})
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*FSM{"live": f, "restored": g} {
		before := liveHash(x)
		if r := create(x, "/a", "n1", true, 4); permKind(r) != errs.Permission {
			t.Fatalf("%s: replay of n1: %v", name, r)
		}
		if liveHash(x) != before {
			t.Fatalf("%s: a refused replay changed the namespace", name)
		}
		// Past its expiry the nonce is forgotten (the authorizer refuses
		// the token itself by then).
		if r := create(x, "/b", "n2", false, 60_001); r.ErrorMsg != "" {
			t.Fatalf("%s: %v", name, r.ErrorMsg)
		}
		if _, ok := x.st.nonces.exp["n1"]; ok || len(x.st.nonces.order) != 1 {
			t.Fatalf("%s: expired nonces kept: %v", name, x.st.nonces.order)
		}
	}
}

// TestSpentNoncesEncoding: the section round-trips and a bad one is
// Corrupt, never a panic.
func TestSpentNoncesEncoding(t *testing.T) {
	s := newSpentNonces()
	s.spend("aa", 5)
	s.spend("bb", 7)
	var buf bytes.Buffer
	if err := s.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := readSpentNonces(bufio.NewReader(bytes.NewReader(buf.Bytes())))
	if err != nil || len(got.order) != 2 || got.exp["aa"] != 5 || got.exp["bb"] != 7 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{buf.Bytes()[:buf.Len()-1], {2, 2, 'a', 'a', 0, 0, 0, 0, 0, 0, 0, 0, 2, 'a', 'a', 0, 0, 0, 0, 0, 0, 0, 0}, {1, 0xff, 0x7f}} {
		if _, err := readSpentNonces(bytes.NewReader(bad)); errs.KindOf(err) != errs.Corrupt {
			t.Fatalf("%x: %v, want Corrupt", bad, err)
		}
	}
}
