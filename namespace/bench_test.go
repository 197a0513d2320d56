package namespace

import (
	"bytes"
	"io"
	"strconv"
	"testing"
)

// BenchmarkCreate measures Create of new files spread over 1000
// directories, names in scrambled order (the FSM's hot path).
func BenchmarkCreate(b *testing.B) { benchCreate(b, false) }

// BenchmarkCreateQuota is BenchmarkCreate below a directory with a quota
// (/user, never reached): each create checks and charges it.
func BenchmarkCreateQuota(b *testing.B) { benchCreate(b, true) }

func benchCreate(b *testing.B, quota bool) {
	tr := New(Limits{}, super, "g")
	const dirs = 1000
	for d := 0; d < dirs; d++ {
		must(b, tr.Mkdirs(mustPath("/user/u"+strconv.Itoa(d)), MkdirsOpts{Perm: 0755, Parents: true}))
	}
	if quota {
		must(b, tr.SetQuota(mustPath("/user"), 1<<40, 1<<50))
	}
	paths := make([]string, b.N)
	for i := range paths {
		h := uint64(i) * 0x9E3779B97F4A7C15 // scramble insertion order
		paths[i] = "/user/u" + strconv.Itoa(i%dirs) + "/part-" + strconv.FormatUint(h>>40, 16) + "-" + strconv.Itoa(i)
	}
	o := CreateOpts{Perm: 0644, Replication: 3, BlockSize: 128 << 20, Owner: "alice", MtimeMs: 1}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := tr.Create(mustPath(paths[i]), o); err != nil {
			b.Fatal(err)
		}
	}
}

func fileWithBlocks(b *testing.B, n int) (*Tree, string) {
	tr := New(Limits{}, super, "g")
	p := "/user/alice/data/2026/11/part-00000"
	fi, _, err := tr.Create(mustPath(p), CreateOpts{Perm: 0644, Replication: 3, BlockSize: 128 << 20, CreateParent: true})
	must(b, err)
	var prev *Block
	for i := 0; i < n; i++ {
		id, gs := tr.AllocBlock()
		blk, _, err := tr.AddBlock(mustPath(p), fi.ID, prev, id, gs, 1)
		must(b, err)
		blk.Length = 128 << 20
		prev = &blk
	}
	_, blocks, _ := tr.File(mustPath(p))
	c := append([]Block(nil), blocks...)
	c[n-1].Length = 1
	_, err = tr.Complete(mustPath(p), fi.ID, c, 2)
	must(b, err)
	return tr, p
}

// BenchmarkFileLookup1000Blocks is the namespace side of
// GetBlockLocations: resolve a path six deep and walk its 1000 blocks.
func BenchmarkFileLookup1000Blocks(b *testing.B) { benchFileLookup(b, 1000) }

// BenchmarkFileLookup1Block is GetBlockLocations' namespace side for the
// common file: resolve a path six deep, one block.
func BenchmarkFileLookup1Block(b *testing.B) { benchFileLookup(b, 1) }

// benchFileLookup resolves a file of nblocks blocks and walks them.
func benchFileLookup(b *testing.B, nblocks int) {
	tr, p := fileWithBlocks(b, nblocks)
	b.ReportAllocs()
	b.ResetTimer()
	var sum uint64
	for i := 0; i < b.N; i++ {
		fi, blocks, err := tr.File(mustPath(p))
		if err != nil || fi.NumBlocks != nblocks {
			b.Fatal(err)
		}
		for _, blk := range blocks {
			sum += blk.Length
		}
	}
	_ = sum
}

// BenchmarkAddBlock measures AddBlock on files growing to 1000 blocks,
// including the copy-on-write copy of the block list.
func BenchmarkAddBlock(b *testing.B) {
	tr := New(Limits{}, super, "g")
	o := CreateOpts{Perm: 0644, Replication: 3, BlockSize: 128 << 20, MtimeMs: 1}
	var fi FileInfo
	var prev *Block
	p := ""
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%1000 == 0 {
			p = "/f" + strconv.Itoa(i)
			fi, _, _ = tr.Create(mustPath(p), o)
			prev = nil
		}
		id, gs := tr.AllocBlock()
		blk, _, err := tr.AddBlock(mustPath(p), fi.ID, prev, id, gs, 1)
		if err != nil {
			b.Fatal(err)
		}
		blk.Length = 128 << 20
		prev = &blk
	}
}

// BenchmarkImage writes and reads an image of 100 dirs x 100 files x 10 blocks.
func BenchmarkImage(b *testing.B) {
	tr := New(Limits{}, super, "g")
	for d := 0; d < 100; d++ {
		for f := 0; f < 100; f++ {
			p := "/d" + strconv.Itoa(d) + "/f" + strconv.Itoa(f)
			fi, _, err := tr.Create(mustPath(p), CreateOpts{Perm: 0644, Replication: 3, BlockSize: 1 << 20, CreateParent: true, Owner: "alice"})
			must(b, err)
			var prev *Block
			for k := 0; k < 10; k++ {
				id, gs := tr.AllocBlock()
				blk, _, _ := tr.AddBlock(mustPath(p), fi.ID, prev, id, gs, 1)
				blk.Length = 1 << 20
				prev = &blk
			}
		}
	}
	var buf bytes.Buffer
	must(b, tr.WriteImage(&buf))
	img := buf.Bytes()
	b.Run("write", func(b *testing.B) {
		b.SetBytes(int64(len(img)))
		for i := 0; i < b.N; i++ {
			must(b, tr.WriteImage(io.Discard))
		}
	})
	b.Run("read", func(b *testing.B) {
		b.SetBytes(int64(len(img)))
		for i := 0; i < b.N; i++ {
			_, err := ReadImage(bytes.NewReader(img))
			must(b, err)
		}
	})
	b.Run("hash", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			tr.Hash()
		}
	})
}
