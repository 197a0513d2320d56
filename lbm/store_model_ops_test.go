package lbm

import (
	"bytes"
	"slices"

	"pgregory.net/rapid"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// replace rewrites a live block through an open-ended Replace writer
// (append or recovery): hflush-style writes with partial chunks, maybe a
// Truncate, reads through the writer, maybe a genstamp bump, then Commit
// or Abort. The old version must stay readable until Commit.
func (sm *storeModel) replace(t *rapid.T, tolerate bool) {
	ids := sortedIDs(sm.live)
	if len(ids) == 0 {
		return
	}
	id := rapid.SampledFrom(ids).Draw(t, "replaceID")
	old := version{sm.genOf(id), sm.live[id]}
	gen := old.gen + uint64(rapid.IntRange(1, 3).Draw(t, "genStep"))
	bpc := rapid.SampledFrom([]int{64, 512, 4096}).Draw(t, "bpc")
	data := modelData(id<<20|gen, rapid.IntRange(0, 9000).Draw(t, "size"))
	sm.ops++
	fail := func(what string, err error) {
		if !tolerate && len(sm.s.FailedDirs()) == 0 {
			t.Fatalf("replace %d: %s: %v", id, what, err)
		}
	}
	w, err := sm.s.CreateWith(ctx, BlockMeta{ID: id, Inode: id % 5, GenStamp: gen},
		CreateOptions{BytesPerChecksum: bpc, OpenEnded: true, Replace: true})
	if err != nil {
		fail("create", err)
		return
	}
	defer w.Abort()
	// Bounded: rapid draws minimal values once its input runs out.
	for calls, cuts := 0, 0; int(w.Written()) < len(data); calls++ {
		start := int(w.Written()) / bpc * bpc
		p := min(len(data), int(w.Written())+rapid.IntRange(1, 3*bpc).Draw(t, "hflush"))
		if calls >= 20 {
			p = len(data)
		}
		if err := w.WriteAt(int64(start), data[start:p], chunks.Sums(nil, data[start:p], bpc)); err != nil {
			fail("write", err)
			return
		}
		sm.checkCTR(t, "replace write")
		if cuts < 2 && rapid.IntRange(0, 4).Draw(t, "truncate") == 0 {
			cuts++
			if err := w.Truncate(int64(rapid.IntRange(0, p).Draw(t, "cut"))); err != nil {
				fail("truncate", err)
				return
			}
			if rapid.IntRange(0, 2).Draw(t, "commitCut") == 0 {
				// Block recovery: commit the agreed length, short of the cut bytes.
				data = data[:w.Written()]
			}
		}
		if rapid.Bool().Draw(t, "readWriter") {
			cr, err := w.ReadChunks(0, 0, nil)
			if err != nil {
				fail("writer read", err)
				return
			}
			if !bytes.Equal(cr.Data, data[:w.Written()]) {
				t.Fatalf("replace %d: writer read: wrong bytes", id)
			}
		}
	}
	if got, err := sm.s.Read(ctx, id, 0, int64(len(old.data))); err == nil && !bytes.Equal(got, old.data) {
		t.Fatalf("replace %d: old version damaged during the write", id)
	} else if err != nil && !tolerate && len(sm.s.FailedDirs()) == 0 {
		t.Fatalf("replace %d: old version unreadable during the write: %v", id, err)
	}
	if rapid.IntRange(0, 3).Draw(t, "bumpGen") == 0 {
		gen++
		if err := w.SetGenStamp(gen); err != nil {
			fail("set genstamp", err)
			return
		}
	}
	if rapid.IntRange(0, 4).Draw(t, "abort") == 0 {
		w.Abort()
		return
	}
	info, err := w.Commit(ctx)
	if err != nil {
		fail("commit", err)
		delete(sm.live, id)
		sm.maybe[id] = old.data
		sm.alt[id] = version{gen, data}
		return
	}
	if info.CRC != crc32c(data) || info.Length != int64(len(data)) || info.GenStamp != gen {
		t.Fatalf("replace %d: commit info %+v", id, info)
	}
	if tolerate || len(sm.s.FailedDirs()) > 0 {
		sm.shadow[id] = append(sm.shadow[id], old)
	}
	sm.live[id] = data
	sm.gen[id] = gen
}

// put stores 1-3 new blocks in one batch. tolerate: an error is allowed
// (a fault or crash is armed, or a dir already failed).
func (sm *storeModel) put(t *rapid.T, tolerate bool) {
	n := rapid.IntRange(1, 3).Draw(t, "batch")
	var ms []BlockMeta
	var ds [][]byte
	for range n {
		sm.next++
		id := sm.next
		ms = append(ms, BlockMeta{ID: id, Inode: id % 5, GenStamp: id})
		ds = append(ds, modelData(id, rapid.IntRange(0, 9000).Draw(t, "size")))
	}
	err := sm.s.PutBatch(ctx, ms, ds)
	sm.ops++
	if err != nil && !tolerate && len(sm.s.FailedDirs()) == 0 {
		t.Fatalf("put %d..%d: %v", ms[0].ID, sm.next, err)
	}
	for i, m := range ms {
		if err == nil {
			sm.live[m.ID] = ds[i]
		} else {
			sm.maybe[m.ID] = ds[i]
		}
	}
}

// stream writes one new block through Create/Write(/Sync)/Commit, in
// random runs of chunks, and sometimes aborts it instead of committing.
// A block whose writer failed before Commit, or was aborted, never had a
// record: it must never appear. A failed Commit may or may not survive.
func (sm *storeModel) stream(t *rapid.T, tolerate bool) {
	sm.next++
	id := sm.next
	bpc := rapid.SampledFrom([]int{64, 512, 4096}).Draw(t, "bpc")
	data := modelData(id, rapid.IntRange(0, 9000).Draw(t, "size"))
	abort := rapid.IntRange(0, 4).Draw(t, "abort") == 0
	sm.ops++
	fail := func(what string, err error) {
		if !tolerate && len(sm.s.FailedDirs()) == 0 {
			t.Fatalf("stream %d: %s: %v", id, what, err)
		}
	}
	w, err := sm.s.Create(ctx, BlockMeta{ID: id, Inode: id % 5, GenStamp: id, Length: int64(len(data))}, bpc)
	if err != nil {
		fail("create", err)
		sm.gone[id] = true
		return
	}
	defer w.Abort()
	for p := 0; p < len(data); {
		piece := data[p:min(p+bpc*rapid.IntRange(1, 5).Draw(t, "chunks"), len(data))]
		if err := w.Write(piece, chunks.Sums(nil, piece, bpc)); err != nil {
			fail("write", err)
			sm.gone[id] = true
			return
		}
		p += len(piece)
		if rapid.IntRange(0, 3).Draw(t, "sync") == 0 {
			if err := w.Sync(); err != nil {
				fail("sync", err)
				sm.gone[id] = true
				return
			}
		}
	}
	if abort {
		w.Abort()
		sm.gone[id] = true
		return
	}
	info, err := w.Commit(ctx)
	if err != nil {
		fail("commit", err)
		sm.maybe[id] = data
		return
	}
	if info.CRC != crc32c(data) || info.Length != int64(len(data)) || info.BytesPerChecksum != bpc {
		t.Fatalf("stream %d: commit info %+v", id, info)
	}
	sm.live[id] = data
}

func (sm *storeModel) del(t *rapid.T, tolerate bool) {
	ids := sortedIDs(sm.live)
	if len(ids) == 0 || rapid.IntRange(0, 9).Draw(t, "unknownDelete") == 0 {
		id := sm.next + 1000
		if err := sm.s.Delete(ctx, id); !errs.Is(err, errs.NotFound) {
			t.Fatalf("delete of unknown block %d: %v", id, err)
		}
		return
	}
	id := rapid.SampledFrom(ids).Draw(t, "deleteID")
	err := sm.s.Delete(ctx, id)
	sm.ops++
	if err != nil && !tolerate && len(sm.s.FailedDirs()) == 0 {
		t.Fatalf("delete %d: %v", id, err)
	}
	if err == nil {
		sm.gone[id] = true
	} else {
		sm.maybe[id] = sm.live[id]
	}
	delete(sm.live, id)
}

// read reads a random range of a live block. faulty: an injected fault
// may make it fail with errs.IO (never anything else, never wrong bytes).
func (sm *storeModel) read(t *rapid.T, faulty bool) {
	ids := sortedIDs(sm.live)
	if len(ids) == 0 {
		return
	}
	id := rapid.SampledFrom(ids).Draw(t, "readID")
	want := sm.live[id]
	off := rapid.IntRange(0, len(want)).Draw(t, "off")
	n := rapid.IntRange(0, len(want)-off).Draw(t, "n")
	got, err := sm.s.Read(ctx, id, int64(off), int64(n))
	if err != nil {
		if faulty && errs.Is(err, errs.IO) {
			return
		}
		t.Fatalf("read %d [%d,+%d): %v", id, off, n, err)
	}
	if !bytes.Equal(got, want[off:off+n]) {
		t.Fatalf("read %d [%d,+%d): wrong bytes", id, off, n)
	}
	if rapid.Bool().Draw(t, "readChunks") {
		cr, err := sm.s.ReadChunks(ctx, id, int64(off), int64(n), nil)
		if err != nil {
			if faulty && errs.Is(err, errs.IO) {
				return
			}
			t.Fatalf("read chunks %d [%d,+%d): %v", id, off, n, err)
		}
		end := off + n
		if n == 0 {
			end = len(want)
		}
		lo := int(cr.Offset)
		if (end > off && (lo > off || lo+len(cr.Data) < end)) || !bytes.Equal(cr.Data, want[lo:lo+len(cr.Data)]) ||
			!slices.Equal(cr.CRCs, chunks.Sums(nil, cr.Data, cr.BytesPerChecksum)) {
			t.Fatalf("read chunks %d [%d,+%d): wrong range at %d (%d bytes)", id, off, n, lo, len(cr.Data))
		}
	}
	if off > 0 && rapid.Bool().Draw(t, "outOfRange") {
		if _, err := sm.s.Read(ctx, id, int64(off), int64(len(want)-off+1)); !errs.Is(err, errs.Invalid) && !(faulty && errs.Is(err, errs.IO)) {
			t.Fatalf("read past the end of %d: %v", id, err)
		}
	}
}
