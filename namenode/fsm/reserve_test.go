package fsm

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// TestPutFileReservations: PutFile takes ids only from a live reservation,
// each once, and never after the reservation expired, on a node restored
// from a snapshot too; a refused PutFile leaves its ids usable.
func TestPutFileReservations(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	alice := &api.Caller{User: "alice", ClientId: "a1"}
	if r := permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Path: "/pub", Perm: 0o777}); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	res := permApply(t, f, CmdReserveIds, &api.ReserveIdsCommand{Count: 4, MtimeUnixMs: 10, ExpiresUnixMs: 1000})
	rv := res.GetReserved()
	if res.ErrorMsg != "" || rv.GetCount() != 4 {
		t.Fatalf("reserve: %v %v", res.ErrorMsg, rv)
	}
	for _, bad := range []*api.ReserveIdsCommand{
		{Count: 4, MtimeUnixMs: 10, ExpiresUnixMs: 10},                // no life
		{Count: 4, MtimeUnixMs: 10, ExpiresUnixMs: 10 + 25*3600*1000}, // past 24 h
		{Count: 0, MtimeUnixMs: 10, ExpiresUnixMs: 1000},
		{Count: namespace.MaxReserve + 1, MtimeUnixMs: 10, ExpiresUnixMs: 1000},
	} {
		if r := permApply(t, f, CmdReserveIds, bad); permKind(r) != errs.Invalid {
			t.Fatalf("reserve %v: %v, want Invalid", bad, r)
		}
	}
	crc := uint32(7)
	put := func(f *FSM, path string, i uint64, now int64) *api.CommandResult {
		return permApply(t, f, CmdPutFile, &api.PutFileCommand{
			Create:  &api.CreateCommand{Caller: alice, Path: path, Perm: 0o644, Replication: 1, BlockSize: 1024, MtimeUnixMs: now},
			InodeId: rv.FirstInode + i, Block: &api.Block{Id: rv.FirstBlock + i, GenStamp: rv.GenStamp, Length: 10, Crc32C: &crc},
			TokenExpiresUnixMs: 900,
		})
	}
	if r := put(f, "/pub/a", 0, 20); r.ErrorMsg != "" || r.Status.GetLength() != 10 {
		t.Fatalf("put: %v %v", r.ErrorMsg, r.Status)
	}
	// Refused by the namespace (exists): id 1 stays usable.
	if r := put(f, "/pub/a", 1, 21); permKind(r) != errs.Exist {
		t.Fatalf("put over an existing file: %v", r)
	}
	g := restored(t, f)
	for name, x := range map[string]*FSM{"live": f, "restored": g} {
		cases := []struct {
			path string
			i    uint64
			now  int64
			want errs.Kind
		}{
			{"/pub/again", 0, 30, errs.Precondition},   // ids used
			{"/pub/late", 1, 901, errs.Permission},     // the token expired
			{"/pub/b", 1, 40, 0},                       // unused: fine
			{"/pub/past", 4, 40, errs.Precondition},    // beyond the range
			{"/pub/expired", 2, 1001, errs.Permission}, // token and range expired
		}
		for _, c := range cases {
			if r := put(x, c.path, c.i, c.now); permKind(r) != c.want {
				t.Fatalf("%s: put %s with id %d at %d: %v, want kind %v", name, c.path, c.i, c.now, r.ErrorMsg, c.want)
			}
		}
		// Inode and block moved apart: not reserved together.
		r := permApply(t, x, CmdPutFile, &api.PutFileCommand{
			Create:  &api.CreateCommand{Caller: alice, Path: "/pub/mixed", Perm: 0o644, Replication: 1, BlockSize: 1024, MtimeUnixMs: 50},
			InodeId: rv.FirstInode + 3, Block: &api.Block{Id: rv.FirstBlock + 2, GenStamp: rv.GenStamp, Length: 10, Crc32C: &crc}, TokenExpiresUnixMs: 900,
		})
		if permKind(r) != errs.Precondition {
			t.Fatalf("%s: mixed ids: %v", name, r.ErrorMsg)
		}
		// After the range's expiry it is gone, by the commands' clock.
		permApply(t, x, CmdReserveIds, &api.ReserveIdsCommand{Count: 1, MtimeUnixMs: 2000, ExpiresUnixMs: 3000})
		if n := len(x.st.reserved.rs); n != 1 {
			t.Fatalf("%s: %d ranges after the first expired, want 1", name, n)
		}
	}
}

// TestReservationsEncoding: the section round-trips, used bits kept, and a
// bad one is Corrupt, never a panic.
func TestReservationsEncoding(t *testing.T) {
	r := &reservations{rs: []reservation{
		{firstInode: 10, firstBlock: 20, genStamp: 3, count: 70, expMs: 99, used: []uint64{1 << 5, 1 << 1}, left: 68},
		{firstInode: 80, firstBlock: 90, genStamp: 4, count: 1, expMs: 100, used: []uint64{0}, left: 1},
	}}
	var b bytes.Buffer
	if err := r.writeTo(&b); err != nil {
		t.Fatal(err)
	}
	got, err := readReservations(bufio.NewReader(bytes.NewReader(b.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.rs) != 2 || got.rs[0].left != 68 || got.rs[0].used[1] != 2 || got.rs[1].expMs != 100 {
		t.Fatalf("round trip: %+v", got.rs)
	}
	for n := range b.Len() {
		if _, err := readReservations(bufio.NewReader(bytes.NewReader(b.Bytes()[:n]))); n > 0 && !errs.Is(err, errs.Corrupt) {
			t.Fatalf("cut at %d: %v, want Corrupt", n, err)
		}
	}
}
