package blocks

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"
)

// TestRecordSizes pins the sizes the block map's memory rests on: a
// blockInfo with three replicas in the 48-byte size class, a replica in 4.
func TestRecordSizes(t *testing.T) {
	if got := unsafe.Sizeof(blockInfo{}); got != 48 {
		t.Errorf("blockInfo is %d bytes, want 48", got)
	}
	if got := unsafe.Sizeof(loc(0)); got != 4 {
		t.Errorf("loc is %d bytes, want 4", got)
	}
}

// TestLocFlags checks that flags never touch the datanode number.
func TestLocFlags(t *testing.T) {
	all := locCorrupt | locInvalidating | locVerified | locSuspect | locVerifying | locOwnStamp
	for _, num := range []uint32{0, 1, 12345, numMask} {
		l := newLoc(num)
		l.set(all, true)
		if l.num() != num || !l.has(locCorrupt) || !l.has(locOwnStamp) {
			t.Errorf("num %d with every flag: num %d, flags %x", num, l.num(), uint32(l)>>numBits)
		}
		l.set(locCorrupt|locVerifying, false)
		if l.num() != num || l.has(locCorrupt) || l.has(locVerifying) || !l.has(locSuspect) {
			t.Errorf("num %d: clearing two flags left %x", num, uint32(l)>>numBits)
		}
	}
}

// TestSpill grows blocks past the inline replicas and shrinks them back,
// checking the replicas against a plain slice at every step.
func TestSpill(t *testing.T) {
	for _, c := range []struct {
		name   string
		add    int   // replicas added, on datanodes 0..add-1
		remove []int // then removed, by datanode number
	}{
		{"inline only", 3, []int{1, 0, 2}},
		{"spill one", 4, []int{3}},
		{"spill and back", 5, []int{0, 4, 2, 1, 3}},
		{"grow large", 9, []int{8, 0, 7, 1, 6, 2, 5, 3, 4}},
		{"remove inline first", 6, []int{0, 1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s shard
			s.init(nil)
			b := &blockInfo{id: 77, genStamp: 1, length: 10}
			s.blocks.put(b)
			var want []uint32
			check := func(step string) {
				t.Helper()
				var got []uint32
				for _, l := range s.locs(b) {
					got = append(got, l.num())
				}
				slices.Sort(got)
				w := slices.Sorted(slices.Values(want))
				if !slices.Equal(got, w) || s.numLocs(b) != len(want) {
					t.Fatalf("%s: replicas %v (%d), want %v", step, got, s.numLocs(b), w)
				}
				_, inExtra := s.extra[b.id]
				if spill := len(want) > inlineLocs; spill != (b.n == spilled) || spill != inExtra {
					t.Fatalf("%s: %d replicas, n=%d, in extra %v", step, len(want), b.n, inExtra)
				}
				if b.n != spilled && slices.ContainsFunc(b.inline[b.n:], func(l loc) bool { return l != 0 }) {
					t.Fatalf("%s: unused inline slots not cleared: %v", step, b.inline)
				}
			}
			for i := range c.add {
				l := newLoc(uint32(i))
				l.set(locVerified, i%2 == 0)
				if j := s.addLoc(b, l); s.locs(b)[j] != l {
					t.Fatalf("add %d: index %d holds %v", i, j, s.locs(b)[j])
				}
				want = append(want, uint32(i))
				check(fmt.Sprintf("add %d", i))
			}
			for _, num := range c.remove {
				i := slices.IndexFunc(s.locs(b), func(l loc) bool { return l.num() == uint32(num) })
				if s.locs(b)[i].has(locVerified) != (num%2 == 0) {
					t.Fatalf("datanode %d: flags lost", num)
				}
				s.removeLoc(b, i)
				want = slices.DeleteFunc(want, func(x uint32) bool { return x == uint32(num) })
				check(fmt.Sprintf("remove %d", num))
			}
		})
	}
}

// TestReplicaStamps drives replicas' generation stamps and lengths through
// the Manager and checks what each replica reads back, what the Delete
// commands carry, and that only differing replicas take a stamps entry.
func TestReplicaStamps(t *testing.T) {
	const id = 5
	type step struct {
		expect *stamp // SetExpected(id, genStamp) when not nil (length ignored)
		dn     int    // else datanode dn reports gen/len (0: none)
		gen    uint64
		length uint64
		drop   int // else datanode drop reports the replica deleted
	}
	exp := func(gen uint64) step { return step{expect: &stamp{genStamp: gen}} }
	got := func(dn int, gen, length uint64) step { return step{dn: dn, gen: gen, length: length} }
	for _, c := range []struct {
		name    string
		steps   []step
		want    map[int]stamp // by datanode, after the steps
		entries int           // in s.stamps
	}{
		{"all alike", []step{exp(1), got(1, 1, 64), got(2, 1, 64), got(3, 1, 64)},
			map[int]stamp{1: {1, 64}, 2: {1, 64}, 3: {1, 64}}, 0},
		{"one short copy", []step{exp(1), got(1, 1, 64), got(2, 1, 60), got(3, 1, 64)},
			map[int]stamp{1: {1, 64}, 2: {1, 60}, 3: {1, 64}}, 1},
		{"first short copy then two whole", []step{exp(1), got(1, 1, 60), got(2, 1, 64), got(3, 1, 64)},
			map[int]stamp{1: {1, 60}, 2: {1, 64}, 3: {1, 64}}, 2},
		{"append moves every replica", []step{exp(1), got(1, 1, 64), got(2, 1, 64), got(3, 1, 64), exp(2)},
			map[int]stamp{1: {1, 64}, 2: {1, 64}, 3: {1, 64}}, 3},
		{"append, two caught up", []step{exp(1), got(1, 1, 64), got(2, 1, 64), got(3, 1, 64), exp(2), got(1, 2, 90), got(2, 2, 90)},
			map[int]stamp{1: {2, 90}, 2: {2, 90}, 3: {1, 64}}, 1},
		{"append, all caught up", []step{exp(1), got(1, 1, 64), got(2, 1, 64), got(3, 1, 64), exp(2), got(1, 2, 90), got(2, 2, 90), got(3, 2, 90)},
			map[int]stamp{1: {2, 90}, 2: {2, 90}, 3: {2, 90}}, 0},
		{"stale copy deleted", []step{exp(2), got(1, 2, 64), got(2, 1, 50), {drop: 2}},
			map[int]stamp{1: {2, 64}}, 0},
		{"unknown, then named", []step{got(1, 7, 30), got(2, 7, 30), exp(7)},
			map[int]stamp{1: {7, 30}, 2: {7, 30}}, 0},
		{"unknown, then named under another stamp", []step{got(1, 7, 30), got(2, 7, 30), exp(8)},
			map[int]stamp{1: {7, 30}, 2: {7, 30}}, 2},
		{"unknown with two stamps", []step{got(1, 7, 30), got(2, 6, 20), {drop: 1}},
			map[int]stamp{2: {6, 20}}, 0},
		{"spilled replicas keep theirs", []step{exp(1), got(1, 1, 64), got(2, 1, 64), got(3, 1, 64), got(4, 1, 61), got(5, 3, 64)},
			map[int]stamp{1: {1, 64}, 2: {1, 64}, 3: {1, 64}, 4: {1, 61}, 5: {3, 64}}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, _ := newTestManager(t, 5)
			for _, st := range c.steps {
				switch {
				case st.expect != nil:
					m.SetExpected(id, st.expect.genStamp, 100, 3, true)
				case st.dn != 0:
					m.IncrementalReport(dn(st.dn), []Replica{{BlockID: id, GenStamp: st.gen, Length: st.length, Inode: 100}}, nil)
				default:
					m.IncrementalReport(dn(st.drop), nil, []uint64{id})
				}
			}
			s := m.shard(id)
			b := s.blocks.get(id)
			have := map[int]stamp{}
			for _, l := range s.locs(b) {
				g, n := s.stampOf(b, l)
				var k int
				fmt.Sscanf(s.node(l).id, "dn%d", &k)
				have[k] = stamp{g, n}
			}
			if fmt.Sprint(have) != fmt.Sprint(c.want) {
				t.Errorf("replicas %v, want %v", have, c.want)
			}
			if len(s.stamps) != c.entries {
				t.Errorf("%d stamp entries, want %d", len(s.stamps), c.entries)
			}
			checkSideTables(t, s, b)
			checkInvariants(t, m)
			// Deletes carry each replica's own stamp and length.
			m.Forget(id)
			m.ComputeWork()
			for k, w := range c.want {
				cs := commands(m, dn(k))
				if len(cs) != 1 || len(cs[0].Blocks) != 1 {
					t.Fatalf("%s: commands %+v, want one delete", dn(k), cs)
				}
				if r := cs[0].Blocks[0]; r.GenStamp != w.genStamp || r.Length != w.length {
					t.Errorf("%s: delete of gen %d length %d, want %d/%d", dn(k), r.GenStamp, r.Length, w.genStamp, w.length)
				}
			}
			for k := range c.want {
				m.IncrementalReport(dn(k), nil, []uint64{id})
			}
			if len(s.stamps) != 0 || s.blocks.get(id) != nil {
				t.Errorf("after every delete: %d stamp entries, block kept %v", len(s.stamps), s.blocks.get(id) != nil)
			}
		})
	}
}

// TestSideTablesShrink: the stamps and spilled-replica maps are rebuilt
// once a wave that filled them (an append of many blocks, a wave of
// over-replication) has passed, like the queues.
func TestSideTablesShrink(t *testing.T) {
	m, _ := newTestManager(t, 5)
	// 2*shrinkMin blocks in shard 0, so its maps pass shrinkMin.
	var ids []uint64
	for id := uint64(1); len(ids) < 2*shrinkMin; id++ {
		if shardIndex(id) == 0 {
			ids = append(ids, id)
		}
	}
	s := &m.shards[0]
	report := func(node int, gen uint64, deleted bool) {
		var rs []Replica
		var del []uint64
		for _, id := range ids {
			rs = append(rs, Replica{BlockID: id, GenStamp: gen, Length: blkSize, Inode: 100})
			del = append(del, id)
		}
		if deleted {
			m.IncrementalReport(dn(node), nil, del)
		} else {
			m.IncrementalReport(dn(node), rs, nil)
		}
	}
	for _, c := range []struct {
		name  string
		fill  func()
		drain func()
		table func() (addr string, n int)
	}{
		{"stamps after an append",
			func() {
				for _, id := range ids {
					m.SetExpected(id, 1, 100, 3, true)
				}
				for k := 1; k <= 3; k++ {
					report(k, 1, false)
				}
				for _, id := range ids {
					m.SetExpected(id, 2, 100, 3, true)
				}
			},
			func() {
				for k := 1; k <= 3; k++ {
					report(k, 2, false)
				}
			},
			func() (string, int) { return fmt.Sprintf("%p", s.stamps), len(s.stamps) }},
		{"spilled replicas after over-replication",
			func() {
				for k := 4; k <= 5; k++ {
					report(k, 2, false)
				}
			},
			func() {
				for k := 4; k <= 5; k++ {
					report(k, 2, true)
				}
			},
			func() (string, int) { return fmt.Sprintf("%p", s.extra), len(s.extra) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.fill()
			full, n := c.table()
			if n < len(ids) {
				t.Fatalf("filled: %d entries, want at least %d", n, len(ids))
			}
			c.drain()
			after, n := c.table()
			if n != 0 || after == full {
				t.Fatalf("drained: %d entries, rebuilt %v", n, after != full)
			}
			checkInvariants(t, m)
		})
	}
}
