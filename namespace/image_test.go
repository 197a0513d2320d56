package namespace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func image(t testing.TB, tr *Tree) []byte {
	t.Helper()
	var buf bytes.Buffer
	must(t, tr.WriteImage(&buf))
	return buf.Bytes()
}

// checkInvariants walks the tree and checks every index and count.
func checkInvariants(t testing.TB, tr *Tree) {
	t.Helper()
	files, dirs, blocks := 0, 0, 0
	seen := map[ID]bool{}
	var walk func(n *inode)
	walk = func(n *inode) {
		if seen[n.id] || tr.inodes.get(n.id) != n || n.id >= tr.nextID {
			t.Fatalf("inode %d: duplicate or not indexed", n.id)
		}
		seen[n.id] = true
		if !n.dir() {
			if (n.writer() != nil) != (n.state() == UnderConstruction) {
				t.Fatalf("inode %d: state %v, writer %v", n.id, n.state(), n.writer())
			}
			if n.repl() < MinReplication || n.repl() > MaxReplication || n.blockSize == 0 || n.kids().chunks != nil {
				t.Fatalf("inode %d: replication %d, block size %d, %d kids", n.id, n.repl(), n.blockSize, n.kids().len())
			}
			if e := n.ext; e != nil && (len(e.blocks) == 1 || e.blocks != nil && n.b0ID != 0 || e.blocks == nil && e.writer == nil) {
				t.Fatalf("inode %d: ext %+v with inline block %d", n.id, *e, n.b0ID)
			}
			files++
			var l uint64
			var one [1]Block
			bs := n.blockList(&one)
			for _, b := range bs {
				if !tr.ownsBlock(b.ID, n.id) || b.ID >= tr.nextBlockID || b.GenStamp >= tr.nextGenStamp {
					t.Fatalf("block %v of %d badly indexed", b, n.id)
				}
				l += b.Length
			}
			if l != n.length() || len(bs) != n.nblocks() {
				t.Fatalf("inode %d length %d, %d blocks; blocks sum %d, %d of them", n.id, n.length(), n.nblocks(), l, len(bs))
			}
			blocks += len(bs)
			return
		}
		dirs++
		if n.repl() != 0 || n.blockSize != 0 || n.b0ID != 0 || n.state() != Complete || n.writer() != nil || n.ext != nil && n.ext.blocks != nil {
			t.Fatalf("dir %d: file fields set", n.id)
		}
		kids := n.kids()
		count := 0
		for _, ch := range kids.chunks {
			if len(ch.k) < 1 || len(ch.k) > chunkMax {
				t.Fatalf("dir %d: a chunk of %d children", n.id, len(ch.k))
			}
			count += len(ch.k)
		}
		if count != kids.len() {
			t.Fatalf("dir %d: %d children in chunks, counted %d", n.id, count, kids.len())
		}
		var prev *inode
		for c := range kids.all() {
			if c.parent != n || (prev != nil && prev.name >= c.name) {
				t.Fatalf("dir %d: child %q misplaced", n.id, c.name)
			}
			prev = c
			walk(c)
		}
	}
	walk(tr.root)
	f, d, b := tr.Counts()
	if f != files || d != dirs || b != blocks || tr.inodes.len() != files+dirs || tr.blocks.len() != blocks {
		t.Fatalf("counts %d/%d/%d, walk %d/%d/%d, maps %d/%d", f, d, b, files, dirs, blocks, tr.inodes.len(), tr.blocks.len())
	}
}

func TestImageRoundTrip(t *testing.T) {
	for _, tr := range []*Tree{New(Limits{MaxPathLen: 100, MaxComponentLen: 20, MaxBlocksPerFile: 7, MaxDirItems: 9}, "s", "g"), fixture(t)} {
		img := image(t, tr)
		back, err := ReadImage(bytes.NewReader(img))
		must(t, err)
		checkInvariants(t, back)
		if back.Hash() != tr.Hash() {
			t.Fatal("round trip changed the hash")
		}
		if !bytes.Equal(image(t, back), img) {
			t.Fatal("round trip changed the image")
		}
		if back.Limits() != tr.Limits() || back.NextBlockID() != tr.NextBlockID() || back.NextGenStamp() != tr.NextGenStamp() {
			t.Fatal("limits or counters lost")
		}
	}
}

// randomOps applies n seeded random operations and checks that every
// failed one left the tree untouched.
func randomOps(t testing.TB, tr *Tree, seed uint64, n int) {
	r := rand.New(rand.NewPCG(seed, seed))
	names := []string{"a", "b", "c", "dd"}
	randPath := func() string {
		var sb strings.Builder
		for d := r.IntN(3) + 1; d > 0; d-- {
			sb.WriteString("/" + names[r.IntN(len(names))])
		}
		return sb.String()
	}
	var files []string // paths that were created at some point
	mtime := int64(0)
	for i := 0; i < n; i++ {
		mtime++
		p := randPath()
		if len(files) > 0 && r.IntN(2) == 0 {
			p = files[r.IntN(len(files))]
		}
		before := tr.Hash()
		var err error
		switch op := r.IntN(12); op {
		case 0:
			err = tr.Mkdirs(mustPath(p), MkdirsOpts{Perm: uint32(r.IntN(01000)), Parents: r.IntN(2) == 0, Owner: names[r.IntN(4)], MtimeMs: mtime})
		case 1, 2:
			repl, size := uint32(1+r.IntN(3)), uint64(64)
			if r.IntN(10) == 0 {
				repl, size = uint32(r.IntN(40)), uint64(r.IntN(2))
			}
			_, _, err = tr.Create(mustPath(p), CreateOpts{Perm: 0644, Overwrite: r.IntN(3) == 0, CreateParent: r.IntN(2) == 0,
				Replication: repl, BlockSize: size, MtimeMs: mtime})
			if err == nil {
				files = append(files, p)
			}
		case 3, 4, 5:
			fi, blocks, e := tr.File(mustPath(p))
			if e != nil {
				err = e
				break
			}
			var prev *Block
			if len(blocks) > 0 {
				b := blocks[len(blocks)-1]
				b.Length = uint64(r.IntN(int(fi.BlockSize) + 1))
				prev = &b
			}
			id, gs := tr.NextBlockID(), tr.NextGenStamp()
			_, _, err = tr.AddBlock(mustPath(p), fi.ID, prev, id, gs, mtime)
		case 6:
			fi, blocks, e := tr.File(mustPath(p))
			if e != nil {
				err = e
				break
			}
			c := slices.Clone(blocks)
			for j := range c {
				c[j].Length = uint64(r.IntN(int(fi.BlockSize) + 1))
			}
			if len(c) > 0 && r.IntN(8) == 0 {
				c[0].GenStamp++
			}
			_, err = tr.Complete(mustPath(p), fi.ID, c, mtime)
		case 7:
			fi, blocks, e := tr.File(mustPath(p))
			if e != nil || len(blocks) == 0 {
				err = errors.New("skip")
				break
			}
			err = tr.AbandonBlock(mustPath(p), fi.ID, blocks[len(blocks)-1])
		case 8:
			_, err = tr.Delete(mustPath(p), r.IntN(2) == 0, mtime)
		case 9:
			err = tr.Rename(mustPath(p), mustPath(randPath()), mtime)
		case 10:
			err = tr.SetPermission(mustPath(p), uint32(r.IntN(02000)), mtime)
		case 11:
			if r.IntN(2) == 0 {
				err = tr.SetReplication(mustPath(p), uint32(r.IntN(5)))
			} else {
				err = tr.SetOwner(mustPath(p), names[r.IntN(4)], names[r.IntN(4)])
			}
		}
		if err != nil && tr.Hash() != before {
			t.Fatalf("op %d on %s failed (%v) but changed the tree", i, p, err)
		}
		if r.IntN(10) == 0 {
			tr.AllocBlock()
		}
	}
	checkInvariants(t, tr)
}

func TestImageRoundTripRandom(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		tr := New(Limits{MaxBlocksPerFile: 8, MaxDirItems: 6}, "s", "g")
		randomOps(t, tr, seed, 2000)
		f, d, b := tr.Counts()
		img := image(t, tr)
		back, err := ReadImage(bytes.NewReader(img))
		must(t, err)
		checkInvariants(t, back)
		if back.Hash() != tr.Hash() || !bytes.Equal(image(t, back), img) {
			t.Fatalf("seed %d: round trip differs", seed)
		}
		if seed == 1 {
			t.Logf("seed 1: %d files, %d dirs, %d blocks, image %d bytes", f, d, b, len(img))
		}
		// Determinism: the same ops give the same tree.
		a2 := New(Limits{MaxBlocksPerFile: 8, MaxDirItems: 6}, "s", "g")
		randomOps(t, a2, seed, 2000)
		if a2.Hash() != tr.Hash() {
			t.Fatalf("seed %d: same ops, different hash", seed)
		}
	}
}

func TestReadImageTruncatedAndFlipped(t *testing.T) {
	img := image(t, fixture(t))
	for n := 0; n < len(img); n++ {
		_, err := ReadImage(bytes.NewReader(img[:n]))
		wantErr(t, err, errs.Corrupt)
	}
	for i := 0; i < len(img); i++ {
		for _, bit := range []byte{0x01, 0x80} {
			bad := slices.Clone(img)
			bad[i] ^= bit
			_, err := ReadImage(bytes.NewReader(bad))
			if errs.KindOf(err) != errs.Corrupt {
				t.Fatalf("flip %#x at %d: %v", bit, i, err)
			}
		}
	}
	_, err := ReadImage(bytes.NewReader(append(slices.Clone(img), 0)))
	wantErr(t, err, errs.Corrupt, "trailing bytes")
	_, err = ReadImage(io.MultiReader(bytes.NewReader(img[:40]), errReader{}))
	wantErr(t, err, errs.IO, "disk on fire")
	err = fixture(t).WriteImage(errWriter{})
	wantErr(t, err, errs.IO, "disk on fire")
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("disk on fire") }

// reframe rewrites img through edit (which sees each record's type and
// body, and returns the records to emit instead), fixing every checksum.
func reframe(t *testing.T, img []byte, edit func(i int, typ byte, body []byte) [][]byte) []byte {
	out := slices.Clone(img[:12])
	rest := img[12 : len(img)-4]
	for i := 0; len(rest) > 0; i++ {
		n := int(binary.LittleEndian.Uint32(rest[1:5]))
		typ, body := rest[0], slices.Clone(rest[5:5+n])
		rest = rest[9+n:]
		for _, rec := range edit(i, typ, body) {
			h := append([]byte{rec[0]}, binary.LittleEndian.AppendUint32(nil, uint32(len(rec)-1))...)
			h = append(h, rec[1:]...)
			out = append(out, h...)
			out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(h, castagnoli))
		}
	}
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

func TestReadImageSemanticCorruption(t *testing.T) {
	img := image(t, fixture(t))
	keep := func(typ byte, body []byte) [][]byte { return [][]byte{append([]byte{typ}, body...)} }
	// Sanity: an identity reframe reads back.
	if _, err := ReadImage(bytes.NewReader(reframe(t, img, func(_ int, typ byte, b []byte) [][]byte { return keep(typ, b) }))); err != nil {
		t.Fatal(err)
	}
	// Record order: 0 META, 1 root, 2 /a, 3 /a/b, 4 /a/b/c, 5 /a/f, 6 /a/new, 7 /a/uc, 8 /tmp, 9 /tmp/bob.txt, 10 /x, 11 END.
	u64 := func(b []byte, off int, v uint64) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	cases := []struct {
		name string
		edit func(i int, typ byte, b []byte) [][]byte
		msg  string
	}{
		{"bad limit", func(i int, typ byte, b []byte) [][]byte {
			if i == 0 {
				binary.LittleEndian.PutUint32(b[4:], 0)
			}
			return keep(typ, b)
		}, "limit 1 is 0"},
		{"bad counter", func(i int, typ byte, b []byte) [][]byte {
			if i == 0 {
				u64(b, 16, 1)
			}
			return keep(typ, b)
		}, "bad counters"},
		{"no meta", func(i int, typ byte, b []byte) [][]byte {
			if i == 0 {
				return nil
			}
			return keep(typ, b)
		}, "want META"},
		{"root not first", func(i int, typ byte, b []byte) [][]byte {
			if i == 1 {
				return nil
			}
			return keep(typ, b)
		}, "want the root directory"},
		{"duplicate id", func(i int, typ byte, b []byte) [][]byte {
			if i == 3 {
				u64(b, 0, 2)
			}
			return keep(typ, b)
		}, "duplicate inode id 2"},
		{"id beyond counter", func(i int, typ byte, b []byte) [][]byte {
			if i == 3 {
				u64(b, 0, 1000)
			}
			return keep(typ, b)
		}, "inode id 1000 outside"},
		{"parent unseen", func(i int, typ byte, b []byte) [][]byte {
			if i == 3 {
				u64(b, 8, 4)
			}
			return keep(typ, b)
		}, "parent 4 not seen"},
		{"parent is file", func(i int, typ byte, b []byte) [][]byte {
			if i == 6 {
				u64(b, 8, binary.LittleEndian.Uint64(keepID(t, img, 5)))
			}
			return keep(typ, b)
		}, "is a file"},
		{"names out of order", func(i int, typ byte, b []byte) [][]byte {
			if i == 10 {
				return [][]byte{{recEnd}}
			}
			if i == 8 { // /x before /tmp
				return append(keep(recFile, recordBody(t, img, 10)), keep(typ, b)...)
			}
			return keep(typ, b)
		}, "not after"},
		{"file state", func(i int, typ byte, b []byte) [][]byte {
			if i == 10 {
				b[len(b)-5] = 9
			}
			return keep(typ, b)
		}, "unknown file state 9"},
		{"block beyond counter", func(i int, typ byte, b []byte) [][]byte {
			if i == 5 {
				u64(b, len(b)-2*blockLen, 1<<40)
			}
			return keep(typ, b)
		}, "outside 1.."},
		{"block length", func(i int, typ byte, b []byte) [][]byte {
			if i == 5 {
				u64(b, len(b)-blockLen+16, bs+1)
			}
			return keep(typ, b)
		}, "exceeds block size"},
		{"shared block", func(i int, typ byte, b []byte) [][]byte {
			if i == 7 {
				f := recordBody(t, img, 5) // /a/f's first block id
				copy(b[len(b)-blockLen:len(b)-blockLen+8], f[len(f)-2*blockLen:len(f)-2*blockLen+8])
			}
			return keep(typ, b)
		}, "already belongs"},
		{"end counts", func(i int, typ byte, b []byte) [][]byte {
			if i == 11 {
				u64(b, 8, 99)
			}
			return keep(typ, b)
		}, "END counts"},
		{"unknown type", func(i int, typ byte, b []byte) [][]byte {
			if i == 4 {
				typ = 77
			}
			return keep(typ, b)
		}, "unknown record type 77"},
		{"bad name", func(i int, typ byte, b []byte) [][]byte {
			if i == 2 { // "/a" -> "." keeps the length
				b[17] = '.'
			}
			return keep(typ, b)
		}, `"." not allowed`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadImage(bytes.NewReader(reframe(t, img, c.edit)))
			wantErr(t, err, errs.Corrupt, c.msg)
		})
	}
}

// recordBody returns the body of record i of img.
func recordBody(t *testing.T, img []byte, i int) []byte {
	var body []byte
	reframe(t, img, func(j int, typ byte, b []byte) [][]byte {
		if j == i {
			body = b
		}
		return nil
	})
	return body
}

func keepID(t *testing.T, img []byte, i int) []byte { return recordBody(t, img, i)[:8] }

// frame turns data, read as unframed records (type, u32 length, body; the
// length is clamped to what is left), into an image with a valid header
// and valid checksums, so the fuzzer can reach the semantic checks.
func frame(data []byte) []byte { return frameVersion(data, imageVersion) }

// frameVersion is frame with an image version of its own.
func frameVersion(data []byte, version uint32) []byte {
	out := binary.LittleEndian.AppendUint32([]byte(imageMagic), version)
	for len(data) >= 5 {
		n := min(int(binary.LittleEndian.Uint32(data[1:5])), len(data)-5)
		rec := append([]byte{data[0]}, binary.LittleEndian.AppendUint32(nil, uint32(n))...)
		rec = append(rec, data[5:5+n]...)
		out = append(out, rec...)
		out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(rec, castagnoli))
		data = data[5+n:]
	}
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// unframe is the inverse of frame, for seeds.
func unframe(img []byte) []byte {
	var out []byte
	rest := img[12 : len(img)-4]
	for len(rest) > 0 {
		n := int(binary.LittleEndian.Uint32(rest[1:5]))
		out = append(out, rest[:5+n]...)
		rest = rest[9+n:]
	}
	return out
}

func FuzzReadImage(f *testing.F) {
	tr := fixture(f)
	// A snapshottable directory makes the image version 6, the version
	// frame writes, so the fuzzer starts from the newest records.
	must(f, tr.As(nil, "AllowSnapshot").AllowSnapshot(mustPath("/a")))
	img := image(f, tr)
	empty := image(f, New(Limits{}, "s", "g"))
	if !bytes.Equal(frame(unframe(img)), img) {
		f.Fatal("frame(unframe(img)) != img")
	}
	f.Add(img, false)
	f.Add(empty, false)
	f.Add(img[:len(img)/2], false)
	f.Add([]byte{}, false)
	f.Add([]byte("BFSNSIMG\x01\x00\x00\x00"), false)
	f.Add(unframe(img), true)
	f.Add(unframe(empty), true)
	f.Fuzz(func(t *testing.T, data []byte, reframe bool) {
		if reframe {
			data = frame(data)
		}
		tr, err := ReadImage(bytes.NewReader(data))
		if err != nil {
			if k := errs.KindOf(err); k != errs.Corrupt {
				t.Fatalf("kind %v: %v", k, err)
			}
			return
		}
		checkInvariants(t, tr)
		again, err := ReadImage(bytes.NewReader(image(t, tr)))
		if err != nil || again.Hash() != tr.Hash() {
			t.Fatalf("re-read: %v", err)
		}
	})
}

func ExampleTree_WriteImage() {
	tr := New(Limits{}, "hdfs", "supergroup")
	_ = tr.Mkdirs(mustPath("/user"), MkdirsOpts{Perm: 0755, MtimeMs: 1})
	var buf bytes.Buffer
	_ = tr.WriteImage(&buf)
	back, err := ReadImage(&buf)
	fmt.Println(err, back.Hash() == tr.Hash())
	// Output: <nil> true
}

// ownsBlock reports whether the block index says file owns block.
func (t *Tree) ownsBlock(block uint64, file ID) bool {
	owner, ok := t.blocks.get(block)
	return ok && owner == file
}
