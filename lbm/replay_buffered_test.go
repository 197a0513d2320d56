package lbm

import (
	"bytes"
	"fmt"
	"testing"
)

// TestBufferedReplayWindowEdges shrinks the readahead window so that
// frames straddle refills, tails are longer than the window and reads
// bypass it, and checks that every replay mode rebuilds the same store
// from the same image: a clean log, a zero tail, a cut record and a
// flipped bit (whose error text must be the same, file and offset).
func TestBufferedReplayWindowEdges(t *testing.T) {
	defer func(w int64) { readaheadWindow = w }(readaheadWindow)
	for _, enc := range []bool{false, true} {
		// One container: 60 CREATE2 records and 20 DELETEs.
		img := NewMemFS()
		cfg := testConfig(img, []string{"/d"}, enc)
		cfg.CompactLiveRatio = 0
		s := mustOpen(t, cfg)
		for start := uint64(1); start <= 60; start += 6 {
			var ms []BlockMeta
			var ds [][]byte
			for id := start; id < start+6; id++ {
				ms = append(ms, BlockMeta{ID: id, Inode: id, GenStamp: 1})
				ds = append(ds, blockData(id)[:1+id%40])
			}
			if err := s.PutBatch(ctx, ms, ds); err != nil {
				t.Fatal(err)
			}
		}
		for id := uint64(3); id <= 60; id += 3 {
			if err := s.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		mf := metaFiles(t, img, "/d")
		if len(mf) != 1 {
			t.Fatalf("%d containers, want 1", len(mf))
		}
		meta := readAll(t, img, mf[0])
		hdr := int64(fileHeaderLen)
		if enc {
			hdr += encHeaderLen
		}
		rec5 := hdr + 4*int64(frameLen(create2BodyLen))
		images := map[string][]byte{
			"clean":    meta,
			"zerotail": append(bytes.Clone(meta), make([]byte, 3000)...),
			"cut":      meta[:len(meta)-5],
			"flipped": func() []byte {
				b := bytes.Clone(meta)
				b[rec5+20] ^= 0x10
				return b
			}(),
		}
		if !enc {
			// A valid frame header whose body+crc are zero to EOF (plain
			// only: encrypted, the header would have to be encrypted too).
			b := append(bytes.Clone(meta), appendFrame(nil, make([]byte, create2BodyLen))...)
			clear(b[len(meta)+frameHeaderLen:])
			images["headeronly"] = b
		}
		for _, window := range []int64{1 << 20, 4096, 100, 76, 13, 1} {
			for name, b := range images {
				t.Run(fmt.Sprintf("enc=%v/window=%d/%s", enc, window, name), func(t *testing.T) {
					readaheadWindow = window
					var results []string
					for _, mode := range replayModes {
						fs := img.CrashClone(0)
						writeAll(t, fs, mf[0], b)
						c := cfg
						c.FS = fs
						mode.apply(&c)
						s, err := Open(ctx, c)
						if err != nil {
							results = append(results, "err: "+err.Error())
							continue
						}
						var out bytes.Buffer
						for _, bi := range s.Blocks() {
							fmt.Fprintf(&out, "%d/%d/%d;", bi.ID, bi.Length, bi.CRC)
						}
						st := s.OpenStats()
						fmt.Fprintf(&out, " records=%d truncated=%d size=%d", st.Records, st.TruncatedTails, fileSize(t, fs, mf[0]))
						s.Close()
						results = append(results, out.String())
					}
					for i, r := range results[1:] {
						if r != results[0] {
							t.Fatalf("%s and %s disagree:\n%s\n%s", replayModes[0].name, replayModes[i+1].name, results[0], r)
						}
					}
					want := map[string]string{"clean": "truncated=0", "zerotail": "truncated=1", "cut": "truncated=1",
						"headeronly": "truncated=1", "flipped": fmt.Sprintf("offset %d", rec5)}[name]
					if !bytes.Contains([]byte(results[0]), []byte(want)) {
						t.Fatalf("%s: want %q in %s", name, want, results[0])
					}
				})
			}
		}
	}
}
