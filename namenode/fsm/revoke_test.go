package fsm

import (
	"bytes"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

const fp1 = "AB:CD:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd"

// revokeCmds are deny-list commands as Admin.Revoke and Unrevoke build
// them: stamped by the proposer.
func revokeCmds(t *testing.T) []struct {
	t   CmdType
	msg proto.Message
} {
	t.Helper()
	at := time.UnixMilli(1_700_000_000_000)
	var out []struct {
		t   CmdType
		msg proto.Message
	}
	for _, c := range []struct {
		t CmdType
		e *api.RevokedEntry
	}{
		{CmdRevoke, &api.RevokedEntry{Serial: "0x00Ab12", Reason: "laptop stolen"}},
		{CmdRevoke, &api.RevokedEntry{Fingerprint: fp1}},
		{CmdRevoke, &api.RevokedEntry{Role: "namenode", Name: "nn2"}},
		{CmdRevoke, &api.RevokedEntry{Role: "user", Name: "mallory"}},
		{CmdUnrevoke, &api.RevokedEntry{Role: "user", Name: "mallory"}},
	} {
		m, err := RevokeCommand(c.t, c.e, "user/root", at)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, struct {
			t   CmdType
			msg proto.Message
		}{c.t, m})
	}
	return out
}

// TestRevokeDeterministic: the same deny-list commands applied on two
// FSMs give the same Hash, the same list and the same published DenyList;
// the entries are normalized and carry the proposer's stamp, not a clock
// read while applying.
func TestRevokeDeterministic(t *testing.T) {
	var hashes [2][32]byte
	var fsms [2]*FSM
	for i := range fsms {
		f := New(Config{Superuser: "root", Supergroup: "supergroup"})
		empty := f.Hash()
		for _, c := range revokeCmds(t) {
			if r := permApply(t, f, c.t, c.msg); r.ErrorMsg != "" {
				t.Fatal(r.ErrorMsg)
			}
		}
		if f.Hash() == empty {
			t.Fatal("the deny list is not in the Hash")
		}
		hashes[i], fsms[i] = f.Hash(), f
		time.Sleep(2 * time.Millisecond) // a clock read in apply would differ
	}
	if hashes[0] != hashes[1] {
		t.Fatal("same commands, different hashes")
	}
	got := fsms[0].Revoked()
	if len(got) != 3 || got[0].Role != "namenode" || got[1].Serial != "ab12" || got[2].Fingerprint != "abcd00112233445566778899aabbccddeeff00112233445566778899aabbccdd" {
		t.Fatalf("list: %v", got)
	}
	if got[1].RevokedBy != "user/root" || got[1].RevokedUnixMs != 1_700_000_000_000 || got[1].Reason != "laptop stolen" {
		t.Fatalf("stamp: %v", got[1])
	}
	d := fsms[1].Revocations().Load()
	if d.Len() != 3 {
		t.Fatalf("published %d entries, want 3", d.Len())
	}
	if err := d.Check(nil, security.Identity{Role: security.RoleNamenode, Name: "nn2"}); !errs.Is(err, errs.Unauthenticated) {
		t.Fatalf("nn2 not refused: %v", err)
	}
	if err := d.Check(nil, security.Identity{Role: security.RoleUser, Name: "mallory"}); err != nil {
		t.Fatalf("lifted entry still refuses: %v", err)
	}
}

// TestRevokeRefusals: a command that names nothing, two things, or a
// malformed serial or fingerprint, an entry without its stamp, and lifting
// an entry that is not there are refused and change nothing.
func TestRevokeRefusals(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	stamp := func(e *api.RevokedEntry) *api.RevokedEntry { e.RevokedBy, e.RevokedUnixMs = "user/root", 1; return e }
	cases := []struct {
		name string
		t    CmdType
		msg  proto.Message
		kind errs.Kind
	}{
		{"nothing", CmdRevoke, &api.RevokeCommand{Entry: stamp(&api.RevokedEntry{})}, errs.Invalid},
		{"two things", CmdRevoke, &api.RevokeCommand{Entry: stamp(&api.RevokedEntry{Serial: "1", Fingerprint: fp1})}, errs.Invalid},
		{"bad serial", CmdRevoke, &api.RevokeCommand{Entry: stamp(&api.RevokedEntry{Serial: "xyz"})}, errs.Invalid},
		{"short fingerprint", CmdRevoke, &api.RevokeCommand{Entry: stamp(&api.RevokedEntry{Fingerprint: "abcd"})}, errs.Invalid},
		{"bad role", CmdRevoke, &api.RevokeCommand{Entry: stamp(&api.RevokedEntry{Role: "admin", Name: "x"})}, errs.Invalid},
		{"bad name", CmdRevoke, &api.RevokeCommand{Entry: stamp(&api.RevokedEntry{Role: "user", Name: "a/b"})}, errs.Invalid},
		{"no stamp", CmdRevoke, &api.RevokeCommand{Entry: &api.RevokedEntry{Serial: "1"}}, errs.Invalid},
		{"lift what is not there", CmdUnrevoke, &api.UnrevokeCommand{Entry: &api.RevokedEntry{Serial: "1"}}, errs.NotFound},
	}
	before := f.Hash()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := permApply(t, f, c.t, c.msg); permKind(r) != c.kind {
				t.Fatalf("got %v %q, want %v", permKind(r), r.ErrorMsg, c.kind)
			}
		})
	}
	if f.Hash() != before || len(f.Revoked()) != 0 || f.Revocations().Load().Len() != 0 {
		t.Fatal("a refused command changed the deny list")
	}
}

// TestRevokeSurvivesSnapshot: the deny list is in the snapshot (since BFSNAP04),
// restores identically and is published on restore; a BFSNAP03 snapshot
// (no deny-list section) restores with an empty list, replacing a list the
// node had.
func TestRevokeSurvivesSnapshot(t *testing.T) {
	f, _, _, _ := leaseFixture(t)
	for _, c := range revokeCmds(t) {
		if r := permApply(t, f, c.t, c.msg); r.ErrorMsg != "" {
			t.Fatal(r.ErrorMsg)
		}
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	data := snapshotBytes(t, snap)
	if string(data[:8]) != snapshotMagic {
		t.Fatalf("magic %q", data[:8])
	}
	g := New(Config{Superuser: "root", Supergroup: "supergroup"})
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if g.Hash() != f.Hash() || len(g.Revoked()) != 3 || g.Revocations().Load().Len() != 3 {
		t.Fatalf("restored deny list differs: %v", g.Revoked())
	}
	if err := g.Revocations().Check(nil, security.Identity{Role: security.RoleNamenode, Name: "nn2"}); err == nil {
		t.Fatal("restored list not published")
	}

	// The same state written as BFSNAP03: no deny-list section.
	e := New(Config{Superuser: "root", Supergroup: "supergroup"})
	esnap, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	cur := snapshotBytes(t, esnap)
	var head byteBuffer
	if err := writeSnapshotHead(&head, e.st, e.AppliedIndex()); err != nil {
		t.Fatal(err)
	}
	n := len(head.b)
	// The head ends with the deny list's count and the admin states' (both 0).
	v3 := withoutReservations(t, append(append([]byte(snapshotMagicV3), cur[8:n-8]...), cur[n:]...))
	if err := g.Restore(io.NopCloser(bytes.NewReader(v3))); err != nil {
		t.Fatal(err)
	}
	if len(g.Revoked()) != 0 || g.Revocations().Load().Len() != 0 || g.Hash() != e.Hash() {
		t.Fatalf("BFSNAP03 restore left a deny list: %v", g.Revoked())
	}
	// A truncated deny-list section is corrupt and changes nothing.
	var fhead byteBuffer
	if err := writeSnapshotHead(&fhead, f.st, f.AppliedIndex()); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(data[:len(fhead.b)-2]))); errs.KindOf(err) != errs.Corrupt {
		t.Fatalf("truncated: %v", err)
	}
	if len(f.Revoked()) != 3 {
		t.Fatal("a refused restore changed the deny list")
	}
}
