package locreply

import (
	"testing"

	"github.com/blockfs/blockfs/blocks"
)

// TestReplyRecycled: a released reply comes back empty (nothing of the
// previous reply shows: ids, tokens, CRCs, datanodes, header), with its
// arrays and datanode entries reused when they fit and new ones when they
// do not.
func TestReplyRecycled(t *testing.T) {
	big := New(10)
	for i := range 10 {
		big.BlockIds[i], big.GenStamps[i], big.Lengths[i], big.ReplicaCounts[i] = uint64(i+1), 7, 1024, 1
		big.ReplicaIndexes = append(big.ReplicaIndexes, 0)
	}
	big.Datanodes = AppendInfo(big.Datanodes, &blocks.Datanode{ID: "dn1", Addr: "a:1"})
	big.Datanodes = AppendInfo(big.Datanodes, &blocks.Datanode{ID: "dn2", Addr: "a:2"})
	big.BlockTokens = append(big.BlockTokens, []byte("tok"))
	big.Crc32Cs = Zeroed(big.Crc32Cs, 10)
	big.Crc32Cs[3] = 1<<32 | 5
	big.Token, big.InodeId, big.FileLength, big.UnderConstruction = []byte("t"), 42, 10240, true
	other := New(1)
	SetHeader(big, 9, "nn1")
	SetHeader(other, 9, "nn1")
	if big.Header == other.Header || big.Header.AppliedIndex != 9 || big.Header.ServedBy != "nn1" {
		t.Fatalf("header %p %v: want its own, apart from another reply's %p", big.Header, big.Header, other.Header)
	}
	ids, dn, hdr := &big.BlockIds[0], big.Datanodes[0], big.Header

	// sync.Pool may drop what it is given (often, under the race
	// detector), so the test refills the reply itself, without the pool.
	cases := []struct {
		name  string
		count int
		reuse bool // the released arrays fit
	}{
		{"fewer blocks", 3, true},
		{"same blocks", 10, true},
		{"more blocks", 11, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clear(big.BlockTokens) // what Release does before the pool
			out := refill(big, c.count)
			if len(out.BlockIds) != c.count || len(out.GenStamps) != c.count || len(out.Lengths) != c.count || len(out.ReplicaCounts) != c.count {
				t.Fatalf("arrays of %d/%d/%d/%d, want %d", len(out.BlockIds), len(out.GenStamps), len(out.Lengths), len(out.ReplicaCounts), c.count)
			}
			if len(out.ReplicaIndexes) != 0 || len(out.Datanodes) != 0 || len(out.BlockTokens) != 0 || len(out.Crc32Cs) != 0 {
				t.Fatalf("left over: %d indexes, %d datanodes, %d tokens, %d CRCs", len(out.ReplicaIndexes), len(out.Datanodes), len(out.BlockTokens), len(out.Crc32Cs))
			}
			if out.Token != nil || out.InodeId != 0 || out.FileLength != 0 || out.UnderConstruction || out.FirstOffset != 0 {
				t.Fatalf("scalar fields left over: %v", out)
			}
			if (&out.BlockIds[0] == ids) != c.reuse {
				t.Fatalf("block array reused %v, want %v", &out.BlockIds[0] == ids, c.reuse)
			}
			if out.Header != hdr {
				t.Fatal("header not reused")
			}
			out.Datanodes = AppendInfo(out.Datanodes, &blocks.Datanode{ID: "dn3"})
			if out.Datanodes[0] != dn || dn.Id != "dn3" || dn.Addr != "" {
				t.Fatalf("entry reused %v, holds %v: want the old entry, rewritten", out.Datanodes[0] == dn, dn)
			}
			big.Datanodes = big.Datanodes[:0]
		})
	}
}

// TestOneBlockReplyOwnsEntries: a new one-block reply's header and
// datanode entries are its own, in its one allocation.
func TestOneBlockReplyOwnsEntries(t *testing.T) {
	a, b := newOneBlockReply(), newOneBlockReply()
	if a.Header == nil || a.Header == b.Header {
		t.Fatal("one-block replies share a header")
	}
	for range 3 {
		a.Datanodes = AppendInfo(a.Datanodes, &blocks.Datanode{ID: "a"})
		b.Datanodes = AppendInfo(b.Datanodes, &blocks.Datanode{ID: "b"})
	}
	for i := range 3 {
		if a.Datanodes[i] == b.Datanodes[i] || a.Datanodes[i].Id != "a" || b.Datanodes[i].Id != "b" {
			t.Fatalf("entry %d shared or overwritten: %v, %v", i, a.Datanodes[i], b.Datanodes[i])
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		r := newOneBlockReply()
		r.Datanodes = AppendInfo(r.Datanodes, &blocks.Datanode{ID: "x"})
	}); n != 1 {
		t.Fatalf("%v allocations for a one-block reply, want 1", n)
	}
}

// TestHugeReplyNotKept: a reply with room for more than maxPooledBlocks
// blocks is not kept for reuse, where it would pin a huge file's arrays
// behind every small read.
func TestHugeReplyNotKept(t *testing.T) {
	huge := New(maxPooledBlocks + 1)
	Release(huge)
	for range 4 {
		if New(1) == huge {
			t.Fatal("a huge reply was kept and handed out again")
		}
	}
}
