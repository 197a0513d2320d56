package blocks

import (
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// Manager is a namenode's block map, datanode registry, placement policy and
// replication/invalidation queues. Create it with New; all methods are safe
// for concurrent use.
type Manager struct {
	cfg    Config
	shards [numShards]shard

	regMu sync.Mutex // serializes registry replacement
	reg   atomic.Pointer[registry]

	randMu sync.Mutex // guards rng; a leaf lock
	rng    *rand.Rand

	// place is the datanodes by rack (placeindex.go); maxFree bounds every
	// live datanode's free space from above, for placement's draws.
	place   atomic.Pointer[placeIndex]
	maxFree atomic.Uint64

	refused refusals
	// admin is the replicated admin-state table (admin.go).
	admin adminTable
	// reported wakes the waiters for replica reports (notify.go).
	reported reportSignal
}

// New returns an empty Manager, or an errs.Invalid error if cfg does not
// validate. A nil cfg.Now means time.Now.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	m := &Manager{cfg: cfg, rng: rand.New(rand.NewPCG(seed, seed^0x5DEECE66D))}
	for i := range m.shards {
		m.shards[i].init(m)
	}
	m.reg.Store(&registry{byID: map[string]*node{}})
	m.place.Store(buildPlaceIndex(m.reg.Load()))
	return m, nil
}

func (m *Manager) shard(id uint64) *shard { return &m.shards[shardIndex(id)] }

func (m *Manager) lookup(id string) *node { return m.reg.Load().byID[id] }

func (m *Manager) nodes() []*node { return m.reg.Load().sorted }

// Register records datanode d (by d.ID) as live, with a heartbeat now,
// replacing its addresses and usage. Re-registering a known datanode keeps
// its replicas until its next full report. It returns an errs.Invalid error
// if d.ID is empty, and an errs.Exist error, changing nothing, if d.ID is a
// live datanode at another address: one id is one datanode, and a second
// process claiming it would take over its commands and replicas. The same
// address may register again at any time (a restart), another one once the
// old registration is dead. It returns an errs.Exhausted error for a new
// id once 2^26 datanode ids have registered (the block map names datanodes
// by a 26-bit number). d.LastHeartbeat and d.State are ignored.
func (m *Manager) Register(d Datanode) error {
	if d.ID == "" {
		m.Refuse(RefusedRegister)
		return errs.New(errs.Invalid, "blocks.Manager.Register", "", "empty datanode id")
	}
	d.State, d.LastHeartbeat, d.Admin = Live, m.cfg.Now(), m.admin.of(d.ID)
	n := m.lookup(d.ID)
	if n == nil {
		m.regMu.Lock()
		old := m.reg.Load()
		if n = old.byID[d.ID]; n == nil && len(old.byNum) >= maxNodes {
			m.regMu.Unlock()
			m.Refuse(RefusedRegister)
			return errs.Newf(errs.Exhausted, "blocks.Manager.Register", d.ID, "this namenode has registered %d datanodes, the most it can", maxNodes)
		}
		if n == nil {
			n = newNode(d)
			n.num = uint32(len(old.sorted))
			r := &registry{byID: make(map[string]*node, len(old.byID)+1), sorted: make([]*node, 0, len(old.sorted)+1)}
			for k, v := range old.byID {
				r.byID[k] = v
			}
			r.byID[d.ID] = n
			r.sorted = append(append(r.sorted, old.sorted...), n)
			r.byNum = append(old.byNum[:len(old.byNum):len(old.byNum)], n)
			sort.Slice(r.sorted, func(i, j int) bool { return r.sorted[i].id < r.sorted[j].id })
			r.rank = make([]uint32, len(r.byNum))
			for i, x := range r.sorted {
				r.rank[x.num] = uint32(i)
			}
			m.reg.Store(r)
			m.place.Store(buildPlaceIndex(r))
		}
		m.regMu.Unlock()
	}
	n.mu.Lock()
	cur := n.snap.Load()
	if cur.State == Live && cur.Addr != d.Addr && cur.Addr != "" {
		n.mu.Unlock()
		m.Refuse(RefusedRegister)
		return errs.Newf(errs.Exist, "blocks.Manager.Register", d.ID,
			"datanode %s is live at %s; refusing a second registration from %s until it is dead", d.ID, cur.Addr, d.Addr)
	}
	moved := cur.rackOrDefault() != d.rackOrDefault()
	n.snap.Store(&d)
	n.needFull = true
	n.mu.Unlock()
	raiseMaxFree(&m.maxFree, d.free())
	if moved {
		m.regMu.Lock()
		m.place.Store(buildPlaceIndex(m.reg.Load()))
		m.regMu.Unlock()
	}
	return nil
}

// Heartbeat records a heartbeat from datanode id with its current usage. It
// returns false if id is not registered (the datanode should register). A
// dead datanode becomes live again; its replicas count again after its next
// full report (see WantsFullReport).
func (m *Manager) Heartbeat(id string, capacity, used uint64, failed uint32) (known bool) {
	n := m.lookup(id)
	if n == nil {
		return false
	}
	now := m.cfg.Now()
	n.mu.Lock()
	d := *n.snap.Load()
	d.Capacity, d.Used, d.FailedVolumes, d.LastHeartbeat = capacity, used, failed, now
	if d.State == Dead {
		d.State = Live
		n.needFull = true
	}
	n.snap.Store(&d)
	n.mu.Unlock()
	raiseMaxFree(&m.maxFree, d.free())
	return true
}

// WantsFullReport reports whether live datanode id has registered or come
// back from the dead since its last full report, so the namenode should ask
// for one in its heartbeat reply. False for unknown and dead datanodes.
func (m *Manager) WantsFullReport(id string) bool {
	n := m.lookup(id)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.needFull && n.snap.Load().State == Live
}

// CheckLiveness marks dead every live datanode whose last heartbeat is more
// than DeadAfterMissed*HeartbeatInterval old. The replicas of a newly dead
// datanode are dropped from the block map (so blocks left with too few good
// replicas enter the under-replicated queue), and its queued commands and
// scheduled deletes are discarded. Call it periodically (e.g. every
// HeartbeatInterval) on every namenode.
func (m *Manager) CheckLiveness() {
	deadline := m.cfg.Now().Add(-m.cfg.deadAfter())
	var maxFree uint64
	for _, n := range m.nodes() {
		d := n.snap.Load()
		if d.State == Live && d.LastHeartbeat.Before(deadline) {
			m.markDead(n, deadline)
		} else if d.State == Live {
			maxFree = max(maxFree, d.free())
		}
	}
	// Lowered to what the live nodes have now (a heartbeat racing this
	// raises it again): placement's draws then accept at the right rate
	// once the emptiest node has filled.
	m.maxFree.Store(maxFree)
}

func (m *Manager) markDead(n *node, deadline time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := *n.snap.Load()
	if d.State != Live || !d.LastHeartbeat.Before(deadline) {
		return // a heartbeat won the race
	}
	d.State = Dead
	n.snap.Store(&d)
	n.needFull = true
	if d.Admin.State.Maintenance() {
		// Kept, unserved: a node in maintenance is expected back, and its
		// death schedules no copies (admin.go).
		held := n.blocks.Append(make([]uint64, 0, n.blocks.Len()))
		forEachShard(m, len(held), func(i int) uint64 { return held[i] }, func(s *shard, i int) {
			if b := s.blocks.get(held[i]); b != nil {
				s.settle(held[i], b, s.tally(b))
			}
		})
	} else {
		m.dropReplicas(n)
	}
	n.qmu.Lock()
	n.invalidate = make(map[uint64]Replica)
	n.cmds = nil
	n.qmu.Unlock()
}

// Datanodes returns snapshots of all registered datanodes, live and dead,
// sorted by id.
func (m *Manager) Datanodes() []Datanode {
	ns := m.nodes()
	out := make([]Datanode, len(ns))
	for i, n := range ns {
		out[i] = *n.snap.Load()
	}
	return out
}

// Datanode returns the snapshot of datanode id, and false if it is unknown.
func (m *Manager) Datanode(id string) (Datanode, bool) {
	if n := m.lookup(id); n != nil {
		return *n.snap.Load(), true
	}
	return Datanode{}, false
}

// forEachShard calls fn(s, i) for i in [0,count) with s the shard of
// key(i), locked, visiting each shard once (a counting sort by shard), so a
// large report takes each shard lock once rather than once per block.
func forEachShard(m *Manager, count int, key func(int) uint64, fn func(s *shard, i int)) {
	forEachShardPar(m, count, key, fn, 1)
}

// forEachShardPar is forEachShard with the shards split among up to
// workers goroutines; fn must then touch nothing but its shard.
func forEachShardPar(m *Manager, count int, key func(int) uint64, fn func(s *shard, i int), workers int) {
	if count == 0 {
		return
	}
	var start [numShards + 1]int32
	idx := make([]uint8, count)
	for i := 0; i < count; i++ {
		si := shardIndex(key(i))
		idx[i] = uint8(si)
		start[si+1]++
	}
	for si := 0; si < numShards; si++ {
		start[si+1] += start[si]
	}
	order := make([]int32, count)
	next := start
	for i := 0; i < count; i++ {
		order[next[idx[i]]] = int32(i)
		next[idx[i]]++
	}
	run := func(from, to int) {
		for si := from; si < to; si++ {
			if start[si] == start[si+1] {
				continue
			}
			s := &m.shards[si]
			s.mu.Lock()
			for _, i := range order[start[si]:start[si+1]] {
				fn(s, int(i))
			}
			s.shrink()
			s.mu.Unlock()
		}
	}
	if workers <= 1 {
		run(0, numShards)
		return
	}
	var wg sync.WaitGroup
	per := (numShards + workers - 1) / workers
	for from := 0; from < numShards; from += per {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(from, min(from+per, numShards))
		}()
	}
	wg.Wait()
}
