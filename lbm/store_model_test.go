package lbm

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"github.com/blockfs/blockfs/errs"
)

// storeModel is the in-memory model of a Store that the rapid state
// machine checks the real store against. A block is in exactly one of:
// live (Put acknowledged, no Delete acknowledged), maybe (a Put or Delete
// failed: either outcome is allowed, but if the block exists it is
// intact), gone (Delete acknowledged, or absent after a crash: it must
// never come back).
type storeModel struct {
	m    *MemFS
	s    *Store
	cfg  Config
	dirs []string

	live  map[uint64][]byte
	maybe map[uint64][]byte
	gone  map[uint64]bool
	next  uint64
	// gen is the genstamp of a live or maybe block that a Replace wrote
	// (absent: the id). alt is the other possible outcome of a maybe
	// block whose Replace commit failed: the new version. shadow holds
	// the older versions a Replace committed while a fault or crash was
	// armed may have left live in another container (its DELETE failed):
	// Open resolves them by genstamp, but once the id is deleted one may
	// come back.
	gen    map[uint64]uint64
	alt    map[uint64]version
	shadow map[uint64][]version
	// guard (encrypted stores) checks that no ciphertext byte of a data
	// file ever changes to another non-zero value; a crash starts a new
	// one (bytes lost in a crash never reached the disk).
	guard *ctrGuard

	crashes, faults, ops int
}

// modelData is the content of block id: n bytes from a seeded stream.
func modelData(id uint64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(int64(id) * 7919)).Read(b)
	return b
}

func newStoreModel(t *rapid.T) *storeModel {
	dirs := []string{"/d0", "/d1"}
	m := NewMemFS()
	cfg := testConfig(m, dirs, rapid.Bool().Draw(t, "encrypt"))
	cfg.KeyFile = "/lbm-server.key"
	cfg.MaxBlocksPerContainer = rapid.IntRange(2, 6).Draw(t, "maxBlocks")
	cfg.CompactLiveRatio = 0.5
	cfg.RuntimeCompaction = rapid.Bool().Draw(t, "runtimeCompaction")
	rapid.SampledFrom(replayModes).Draw(t, "replayMode").apply(&cfg)
	cfg.ReplayWorkers = 2
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return &storeModel{m: m, s: s, cfg: cfg, dirs: dirs,
		live: map[uint64][]byte{}, maybe: map[uint64][]byte{}, gone: map[uint64]bool{},
		gen: map[uint64]uint64{}, alt: map[uint64]version{}, shadow: map[uint64][]version{}}
}

// version is one version of a block: its genstamp and bytes.
type version struct {
	gen  uint64
	data []byte
}

func (sm *storeModel) genOf(id uint64) uint64 {
	if g, ok := sm.gen[id]; ok {
		return g
	}
	return id
}

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
		if err := w.WriteAt(int64(start), data[start:p], appendChunkCRCs(nil, data[start:p], bpc)); err != nil {
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

// checkCTR runs the keystream guard of an encrypted store (not while a
// crash is armed: what is lost then never reached the disk).
func (sm *storeModel) checkCTR(t *rapid.T, step string) {
	if !sm.cfg.Encrypt || sm.m.Dead() {
		return
	}
	sm.m.mu.Lock()
	armed := sm.m.crashIn >= 0 || len(sm.m.faults) > 0
	sm.m.mu.Unlock()
	if armed {
		return
	}
	if sm.guard == nil || sm.guard.fs != FS(sm.m) {
		sm.guard = &ctrGuard{fs: sm.m, dirs: sm.dirs, seen: map[string][]byte{}}
	}
	sm.guard.check(t, step)
}

// versionsOf lists the versions block id may show: its live or maybe
// version, a failed Replace's new version, and shadows.
func (sm *storeModel) versionsOf(id uint64) []version {
	var vs []version
	if d, ok := sm.live[id]; ok {
		vs = append(vs, version{sm.genOf(id), d})
	}
	if d, ok := sm.maybe[id]; ok {
		vs = append(vs, version{sm.genOf(id), d})
	}
	if v, ok := sm.alt[id]; ok {
		vs = append(vs, v)
	}
	return append(vs, sm.shadow[id]...)
}

func sortedIDs(m map[uint64][]byte) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
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
		if err := w.Write(piece, appendChunkCRCs(nil, piece, bpc)); err != nil {
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
			!slices.Equal(cr.CRCs, appendChunkCRCs(nil, cr.Data, cr.BytesPerChecksum)) {
			t.Fatalf("read chunks %d [%d,+%d): wrong range at %d (%d bytes)", id, off, n, lo, len(cr.Data))
		}
	}
	if off > 0 && rapid.Bool().Draw(t, "outOfRange") {
		if _, err := sm.s.Read(ctx, id, int64(off), int64(len(want)-off+1)); !errs.Is(err, errs.Invalid) && !(faulty && errs.Is(err, errs.IO)) {
			t.Fatalf("read past the end of %d: %v", id, err)
		}
	}
}

// verify checks the whole store against the model: every live block
// reads back, nothing gone is there, nothing unknown is there, and a
// surviving maybe block is intact. afterCrash resolves the maybes: what
// a crash-consistent reopen shows is durable.
func (sm *storeModel) verify(t *rapid.T, afterCrash bool) {
	for _, id := range sortedIDs(sm.live) {
		want := sm.live[id]
		got, err := sm.s.Read(ctx, id, 0, int64(len(want)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("acknowledged block %d (%d bytes) lost: %v", id, len(want), err)
		}
		if info, _ := sm.s.Stat(id); info.GenStamp != sm.genOf(id) {
			t.Fatalf("block %d: genstamp %d, want %d", id, info.GenStamp, sm.genOf(id))
		}
	}
	for _, b := range sm.s.Blocks() {
		_, isLive := sm.live[b.ID]
		_, isMaybe := sm.maybe[b.ID]
		if isLive {
			continue
		}
		var v *version
		for _, c := range sm.versionsOf(b.ID) {
			if c.gen == b.GenStamp {
				v = &c
				break
			}
		}
		switch {
		case v == nil && sm.gone[b.ID]:
			t.Fatalf("deleted block %d came back", b.ID)
		case v == nil && !isMaybe:
			t.Fatalf("unknown block %d in the store", b.ID)
		case v == nil:
			t.Fatalf("block %d of a failed operation survived with genstamp %d", b.ID, b.GenStamp)
		}
		got, err := sm.s.Read(ctx, b.ID, 0, int64(len(v.data)))
		if err != nil || !bytes.Equal(got, v.data) || b.Length != int64(len(v.data)) {
			t.Fatalf("block %d (genstamp %d) of a failed operation survived damaged: %v", b.ID, b.GenStamp, err)
		}
		if sm.gone[b.ID] {
			// An old version whose DELETE a fault lost, back after the
			// newer one was deleted: it is live now.
			delete(sm.gone, b.ID)
			sm.live[b.ID], sm.gen[b.ID] = v.data, v.gen
		}
	}
	if afterCrash {
		for _, id := range sortedIDs(sm.maybe) {
			if info, ok := sm.s.Stat(id); ok {
				sm.live[id], sm.gen[id] = sm.maybe[id], sm.genOf(id)
				if v, ok := sm.alt[id]; ok && v.gen == info.GenStamp {
					sm.live[id], sm.gen[id] = v.data, v.gen
				}
			} else {
				sm.gone[id] = true
			}
		}
		clear(sm.maybe)
		clear(sm.alt)
	}
}

func (sm *storeModel) reopen(t *rapid.T, fs *MemFS) {
	sm.s.Close()
	sm.m = fs
	sm.cfg.FS = fs
	s, err := Open(ctx, sm.cfg)
	if err != nil {
		t.Fatalf("reopen (encrypt=%v, inmem=%d, streaming=%v): %v", sm.cfg.Encrypt, sm.cfg.InmemReplayThreshold, sm.cfg.StreamingReplay, err)
	}
	sm.s = s
}

var faultOps = []Op{OpRead, OpWrite, OpSync, OpRename, OpSyncDir, OpPunch, OpRemove, OpCreate, OpTruncate}

func (sm *storeModel) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"Put":     func(t *rapid.T) { sm.put(t, false) },
		"Stream":  func(t *rapid.T) { sm.stream(t, false) },
		"Replace": func(t *rapid.T) { sm.replace(t, false) },
		"Delete":  func(t *rapid.T) { sm.del(t, false) },
		"Read":    func(t *rapid.T) { sm.read(t, false) },
		"Reopen": func(t *rapid.T) {
			sm.reopen(t, sm.m)
			sm.verify(t, false)
		},
		// Crash at a random point of the write path, of compaction or of
		// dead-container removal: the FS loses power after n mutating
		// operations while puts and deletes run; the clone keeps the
		// synced data and a random part of the rest.
		"CrashReopen": func(t *rapid.T) {
			sm.m.CrashAfter(rapid.IntRange(0, 40).Draw(t, "crashAfter"))
			for range rapid.IntRange(1, 8).Draw(t, "opsBeforeCrash") {
				switch rapid.IntRange(0, 4).Draw(t, "crashOp") {
				case 0:
					sm.del(t, true)
				case 1:
					sm.stream(t, true)
				case 2:
					sm.replace(t, true)
				default:
					sm.put(t, true)
				}
			}
			sm.crashes++
			sm.reopen(t, sm.m.CrashClone(rapid.Int64().Draw(t, "cloneSeed")))
			sm.verify(t, true)
		},
		// Crash inside Open's repair (torn-tail truncation, startup
		// compaction, dead-container removal), then reopen the clone.
		"CrashInOpen": func(t *rapid.T) {
			sm.s.Close()
			sm.m.CrashAfter(rapid.IntRange(0, 10).Draw(t, "crashAfter"))
			if s, err := Open(ctx, sm.cfg); err == nil {
				s.Close()
			}
			sm.crashes++
			sm.s = nil
			clone := sm.m.CrashClone(rapid.Int64().Draw(t, "cloneSeed"))
			sm.m, sm.cfg.FS = clone, clone
			s, err := Open(ctx, sm.cfg)
			if err != nil {
				t.Fatalf("reopen after a crash in Open: %v", err)
			}
			sm.s = s
			sm.verify(t, true)
		},
		// Inject EIO or ENOSPC on one kind of operation in one data dir
		// while a few operations run; then clear it.
		"Fault": func(t *rapid.T) {
			op := rapid.SampledFrom(faultOps).Draw(t, "faultOp")
			e := rapid.SampledFrom([]syscall.Errno{syscall.EIO, syscall.ENOSPC}).Draw(t, "faultErr")
			dir := rapid.SampledFrom(sm.dirs).Draw(t, "faultDir")
			sm.m.Inject(Fault{Op: op, PathPrefix: dir + "/", Err: e, Count: rapid.IntRange(0, 3).Draw(t, "faultCount")})
			sm.faults++
			for range rapid.IntRange(1, 5).Draw(t, "opsUnderFault") {
				switch rapid.IntRange(0, 4).Draw(t, "faultyOp") {
				case 0:
					sm.put(t, true)
				case 1:
					sm.del(t, true)
				case 2:
					sm.stream(t, true)
				case 3:
					sm.replace(t, true)
				default:
					sm.read(t, true)
				}
			}
			sm.m.ClearFaults()
		},
		"": func(t *rapid.T) {
			if sm.s == nil {
				return
			}
			sm.checkCTR(t, "after the action")
			for id := range sm.live {
				if _, ok := sm.s.Stat(id); !ok {
					t.Fatalf("live block %d missing from the index", id)
				}
			}
			for id := range sm.gone {
				if _, ok := sm.s.Stat(id); ok {
					t.Fatalf("deleted block %d in the index", id)
				}
			}
		},
	}
}

// TestStoreModel runs random Put/Delete/Read/Reopen/crash/fault sequences
// against the store (plain and encrypted, streaming and in-memory replay,
// runtime or startup compaction) and checks it against storeModel.
func TestStoreModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sm := newStoreModel(t)
		defer func() {
			if sm.s != nil {
				sm.s.Close()
			}
		}()
		t.Repeat(sm.actions())
		sm.reopen(t, sm.m.CrashClone(rapid.Int64().Draw(t, "finalSeed")))
		sm.verify(t, true)
	})
}

// TestStoreModelReplayPathsAgree reopens one crashed image through both
// replay paths: they must rebuild the same index.
func TestStoreModelReplayPathsAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sm := newStoreModel(t)
		acts := sm.actions()
		delete(acts, "Fault")
		t.Repeat(acts)
		sm.s.Close()
		sm.s = nil
		img := sm.m.CrashClone(rapid.Int64().Draw(t, "seed"))
		var lists []string
		for _, mode := range replayModes {
			// Each path gets its own copy: replay repairs what it finds.
			fs := img.CrashClone(0)
			cfg := sm.cfg
			cfg.FS = fs
			mode.apply(&cfg)
			s, err := Open(ctx, cfg)
			if err != nil {
				t.Fatalf("open (%s): %v", mode.name, err)
			}
			var b bytes.Buffer
			for _, bi := range s.Blocks() {
				fmt.Fprintf(&b, "%d/%d/%d/%d/%d;", bi.ID, bi.Length, bi.CRC, bi.Inode, bi.GenStamp)
			}
			st := s.OpenStats()
			fmt.Fprintf(&b, " containers=%d truncated=%d", st.Containers, st.TruncatedTails)
			s.Close()
			lists = append(lists, b.String())
		}
		for i, l := range lists[1:] {
			if l != lists[0] {
				t.Fatalf("%s and %s replay disagree:\n%s\n%s", replayModes[0].name, replayModes[i+1].name, lists[0], l)
			}
		}
	})
}
