package namespace

import (
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// TestTruncate: /a/f has blocks of 100 and 50 bytes.
func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		name    string
		c       *Caller
		path    string
		length  int64
		kind    errs.Kind // 0: success
		sub     string
		done    bool
		blocks  int
		last    uint64
		dropped int
	}{
		{name: "at the end", c: alice, path: "/a/f", length: 150, done: true, blocks: 2, last: 50},
		{name: "at a boundary", c: alice, path: "/a/f", length: 100, done: true, blocks: 1, last: 100, dropped: 1},
		{name: "to zero", c: alice, path: "/a/f", length: 0, done: true, dropped: 2},
		{name: "inside the second block", c: alice, path: "/a/f", length: 120, blocks: 2, last: 20},
		{name: "inside the first block", c: alice, path: "/a/f", length: 7, blocks: 1, last: 7, dropped: 1},
		{name: "larger", c: alice, path: "/a/f", length: 151, kind: errs.Invalid, sub: "Cannot truncate to a larger file size. Current size: 150, truncate size: 151."},
		{name: "negative", c: alice, path: "/a/f", length: -1, kind: errs.Invalid, sub: "negative"},
		{name: "directory", c: alice, path: "/a", length: 0, kind: errs.IsDir, sub: "Path is not a file: /a"},
		{name: "no write access", c: bob, path: "/a/f", length: 0, kind: errs.Permission, sub: "access=-w-"},
		{name: "under construction", c: alice, path: "/a/uc", length: 0, kind: errs.Precondition, sub: "AlreadyBeingCreated"},
		{name: "missing", c: alice, path: "/a/nope", length: 0, kind: errs.NotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := fixture(t)
			h := tr.Hash()
			got, err := tr.As(c.c, "Truncate").Truncate(mustPath(c.path), c.length, 9)
			if c.kind != 0 {
				wantErr(t, err, c.kind, c.sub)
				if tr.Hash() != h {
					t.Fatal("a refused truncate changed the tree")
				}
				return
			}
			must(t, err)
			fi, bs, err := tr.File(mustPath(c.path))
			must(t, err)
			if got.Done != c.done || len(bs) != c.blocks || len(got.Dropped) != c.dropped || fi.Length != uint64(c.length) || fi.MtimeMs != 9 {
				t.Fatalf("got %+v, file %+v with %v", got, fi, bs)
			}
			if c.blocks > 0 && bs[len(bs)-1].Length != c.last {
				t.Fatalf("last block %v, want length %d", bs[len(bs)-1], c.last)
			}
			for _, b := range got.Dropped {
				if _, _, ok := tr.Block(b.ID); ok {
					t.Fatalf("dropped %v still indexed", b)
				}
			}
			if c.done != (fi.State == Complete) {
				t.Fatalf("state %v, done %v", fi.State, c.done)
			}
			if !c.done {
				if fi.Writer != (Writer{Client: "ca", User: "alice"}) || got.Last.HasCRC || got.Last != bs[len(bs)-1] {
					t.Fatalf("writer %+v, last %v of %v", fi.Writer, got.Last, bs)
				}
				// Recovery closes it at the new length.
				fi, _, err := tr.CommitRecovery("CommitBlockSynchronization", fi.ID, Recovery{Block: got.Last, RecoveryID: tr.AllocGenStamp(), Length: got.Last.Length, HasCRC: true, CRC: 5}, 10)
				must(t, err)
				if fi.State != Complete || fi.Length != uint64(c.length) {
					t.Fatalf("after recovery %+v", fi)
				}
			}
			checkInvariants(t, tr)
		})
	}
}
