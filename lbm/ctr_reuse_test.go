package lbm

import (
	"strings"
	"testing"
)

// ctrGuard watches the data files of a dir of an encrypted store: a byte
// position whose ciphertext was seen non-zero must never show another
// non-zero value (the same plaintext at the same offset encrypts the same;
// anything else is a CTR keystream position encrypting two plaintexts).
// Holes read as zero and are skipped.
type ctrGuard struct {
	fs   FS
	dirs []string
	seen map[string][]byte
}

// fataler is what ctrGuard needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func (g *ctrGuard) check(t fataler, step string) {
	t.Helper()
	for _, dir := range g.dirs {
		names, err := g.fs.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for _, n := range names {
			if !strings.HasSuffix(n, ".data") {
				continue
			}
			p := dir + "/" + n
			cur, err := readFile(g.fs, p)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			old := g.seen[p]
			for i := range min(len(old), len(cur)) {
				if old[i] != 0 && cur[i] != 0 && old[i] != cur[i] {
					t.Fatalf("%s: %s offset %d: ciphertext %02x became %02x (keystream reused)", step, p, i, old[i], cur[i])
				}
			}
			if len(cur) > len(old) {
				old = append(old, make([]byte, len(cur)-len(old))...)
			}
			for i, b := range cur {
				if b != 0 {
					old[i] = b
				}
			}
			g.seen[p] = old
		}
	}
}

func readFile(fs FS, p string) ([]byte, error) {
	f, err := fs.OpenFile(p, 0, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	if n, err := f.ReadAt(b, 0); n != len(b) {
		return nil, err
	}
	return b, nil
}

// TestNoKeystreamReuse runs hflushes, short-chunk rewrites, truncations
// (with resends and commits short of the cut bytes), replacements, aborts
// and a reopen on an encrypted store, checking after every step that no
// ciphertext byte ever changed to another non-zero value.
func TestNoKeystreamReuse(t *testing.T) {
	m := NewMemFS()
	cfg := testConfig(m, []string{"/d"}, true)
	cfg.KeyFile = "/key"
	g := &ctrGuard{fs: m, dirs: []string{"/d"}, seen: map[string][]byte{}}
	s := mustOpen(t, cfg)
	step := func(name string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g.check(t, name)
	}
	step("put", s.Put(ctx, BlockMeta{ID: 1, GenStamp: 1}, streamData(1, 3000)))
	data := streamData(2, 20000)
	open := func(id, gen uint64, replace bool) *BlockWriter {
		w, err := s.CreateWith(ctx, BlockMeta{ID: id, GenStamp: gen}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: replace})
		step("create", err)
		return w
	}
	flush := func(w *BlockWriter, p int) {
		t.Helper()
		hflushTo(t, w, data, p)
		g.check(t, "hflush")
	}
	w := open(2, 1, false)
	for _, p := range []int{100, 700, 1500, 4000, 4001, 9000} {
		flush(w, p)
	}
	step("truncate mid-chunk", w.Truncate(5300))
	flush(w, 6000) // resend of the same bytes, short of the cut
	step("truncate again", w.Truncate(2100))
	_, err := w.Commit(ctx) // the table would land on cut bytes: relocated
	step("commit after truncate", err)
	checkVersion(t, s, 2, 1, data[:2100])

	w = open(2, 2, true) // same container: replace
	flush(w, 3000)
	flush(w, 10000)
	step("truncate", w.Truncate(7777))
	flush(w, 12000) // past the cut: no relocation needed
	_, err = w.Commit(ctx)
	step("commit replace", err)
	checkVersion(t, s, 2, 2, data[:12000])

	w = open(3, 1, false)
	flush(w, 5000)
	step("truncate to zero", w.Truncate(0))
	flush(w, 300)
	w.Abort()
	g.check(t, "abort")
	step("put after abort", s.Put(ctx, BlockMeta{ID: 4, GenStamp: 1}, streamData(4, 9000)))

	w = open(7, 1, false)
	flush(w, 9000)
	step("truncate to zero", w.Truncate(0))
	_, err = w.Commit(ctx) // empty: nothing to move, but its range stays used
	step("commit empty", err)
	step("put after an empty commit", s.Put(ctx, BlockMeta{ID: 8, GenStamp: 1}, streamData(8, 9000)))

	w = open(5, 1, false)
	flush(w, 8000)
	step("truncate", w.Truncate(4000))
	_, err = w.Commit(ctx)
	step("commit", err)
	s.Close()
	g.check(t, "close")
	s = mustOpen(t, cfg)
	defer s.Close()
	w = open(6, 1, false)
	flush(w, 15000)
	_, err = w.Commit(ctx)
	step("commit after reopen", err)
	checkVersion(t, s, 2, 2, data[:12000])
	checkVersion(t, s, 5, 1, data[:4000])
	checkVersion(t, s, 6, 1, data[:15000])
}
