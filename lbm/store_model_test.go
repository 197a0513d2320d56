package lbm

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"syscall"
	"testing"
	"time"

	"pgregory.net/rapid"
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
	// Small declared-length blocks through the group commit, or each
	// through its own container writer.
	cfg.GroupCommitMax = rapid.SampledFrom([]int64{0, 64 << 10}).Draw(t, "groupCommitMax")
	// The model expects every operation after ClearFaults to succeed: a
	// dir that ran out of space is tried again at once (TestFullDirComesBack
	// checks the wait).
	cfg.FullRetry = time.Nanosecond
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
