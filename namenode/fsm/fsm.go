package fsm

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/rwlock"
	"github.com/blockfs/blockfs/leases"
	"github.com/blockfs/blockfs/namespace"
	"github.com/blockfs/blockfs/security"
)

// Config is what an FSM is built from. Every field but Superuser and
// Supergroup may be left zero.
type Config struct {
	// Superuser and Supergroup name who passes every permission check
	// (namespace.Policy). They must be the same on every namenode.
	Superuser, Supergroup string
	// Events, if set, is told about the blocks the FSM's commands create
	// and remove (events.go).
	Events BlockEvents
	// Snapshots, if set, is the node's snapshot store: Persist writes its
	// file back as it goes and reaps old snapshots through it.
	Snapshots *SnapshotStore
	// Registerer, if set, gets the FSM's metrics (metrics.go).
	Registerer prometheus.Registerer
	// Revocations, if set, is where the FSM publishes its deny list after
	// every change and restore (revoke.go); New makes one if it is nil.
	Revocations *security.Revocations
}

// state is everything the FSM replicates.
type state struct {
	tree    *namespace.Tree
	members map[string]*api.Member
	// keys are the published token-signing public keys by kid, each in
	// security.PublicKey binary encoding.
	keys map[string][]byte
	// retries answers retried calls (retrycache.go).
	retries *retryCache
	// leases are the writers' leases and the recoveries in progress.
	leases *leases.Table
	// nonces are the CREATE redirect tokens Creates have spent (nonces.go).
	nonces *spentNonces
	// revoked is the deny list by key (revoke.go).
	revoked map[string]*api.RevokedEntry
	// admin is the datanodes' admin states by datanode id, Normal ones
	// absent (admin.go).
	admin map[string]*api.AdminStateEntry
	// reserved are the id ranges PutFile may still use (reserve.go).
	reserved *reservations
}

func newState(superuser, supergroup string) *state {
	return &state{
		tree:     namespace.New(namespace.DefaultLimits(), superuser, supergroup),
		members:  map[string]*api.Member{},
		keys:     map[string][]byte{},
		retries:  newRetryCache(),
		leases:   leases.New(),
		nonces:   newSpentNonces(),
		reserved: &reservations{},
		revoked:  map[string]*api.RevokedEntry{},
		admin:    map[string]*api.AdminStateEntry{},
	}
}

// FSM is the namenode's Raft state machine: the namespace, the members,
// the signing keys, the retry cache, the lease table and the deny list. Raft calls
// ApplyBatch, Snapshot and Restore; everyone else reads through View and
// the query methods (read.go), which take the read lock. Apply takes the
// write lock once per batch. Nothing outside this package sees the lock
// or the state.
type FSM struct {
	mu         rwlock.Mutex
	st         *state
	superuser  string
	supergroup string
	events     BlockEvents
	metrics    *metrics
	snaps      *SnapshotStore
	// revocations publishes the deny list (revoke.go).
	revocations *security.Revocations

	applied atomic.Uint64
	// appliedCh is closed and replaced after every applied batch, waking
	// readers that wait for an index.
	chMu      sync.Mutex
	appliedCh chan struct{}
}

// New returns an FSM holding an empty namespace.
func New(cfg Config) *FSM {
	f := &FSM{
		st:         newState(cfg.Superuser, cfg.Supergroup),
		superuser:  cfg.Superuser,
		supergroup: cfg.Supergroup,
		events:     cfg.Events,
		snaps:      cfg.Snapshots,
		appliedCh:  make(chan struct{}),

		revocations: cfg.Revocations,
	}
	if f.revocations == nil {
		f.revocations = new(security.Revocations)
	}
	if cfg.Registerer != nil {
		f.metrics = newMetrics(cfg.Registerer, f)
	}
	return f
}

var _ raft.BatchingFSM = (*FSM)(nil)

// Apply applies one log entry.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies a batch of log entries under one lock acquisition.
// Each command's result is a *api.CommandResult, a batch entry's a
// BatchResult; a command that fails has its error in its result, and
// never stops the state machine.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	start := time.Now()
	out := make([]any, len(logs))
	var last uint64
	f.mu.Lock()
	for i, l := range logs {
		last = l.Index
		if l.Type != raft.LogCommand {
			continue
		}
		out[i] = f.applyEntry(l.Data)
	}
	if last > 0 {
		// Stored under the lock, so a reader holding it sees the state
		// and its index together (HashAt); waiters are woken after.
		f.applied.Store(last)
	}
	f.mu.Unlock()
	if last > 0 {
		f.notifyApplied()
	}
	if f.metrics != nil {
		f.metrics.apply.Observe(time.Since(start).Seconds())
		f.metrics.batch.Observe(float64(len(logs)))
	}
	return out
}

// ApplyUnlogged applies one encoded command as if it had been committed,
// without a Raft log and without moving the applied index. It is for
// fixtures that fill a single-node namenode quickly (benchmarks); on a
// replicated namenode it would make this node's state differ from its
// peers'.
func (f *FSM) ApplyUnlogged(data []byte) *api.CommandResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applyOne(data)
}

func (f *FSM) notifyApplied() {
	f.chMu.Lock()
	close(f.appliedCh)
	f.appliedCh = make(chan struct{})
	f.chMu.Unlock()
}

// AppliedIndex returns the last applied index.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// WaitApplied blocks until index idx is applied or done is closed, and
// reports whether idx is applied.
func (f *FSM) WaitApplied(done <-chan struct{}, idx uint64) bool {
	for {
		f.chMu.Lock()
		ch := f.appliedCh
		f.chMu.Unlock()
		if f.applied.Load() >= idx {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return f.applied.Load() >= idx
		}
	}
}

// BatchResult is the FSM's answer to a CmdBatch entry: one result per
// command, in order.
type BatchResult []*api.CommandResult

// applyEntry applies one log entry: a single command or a batch.
func (f *FSM) applyEntry(data []byte) any {
	if len(data) == 0 || CmdType(data[0]) != CmdBatch {
		return f.applyOne(data)
	}
	_, msg, err := Decode(data)
	if err != nil {
		return resultError(err)
	}
	cmds := msg.(*api.BatchCommand).Commands
	out := make(BatchResult, len(cmds))
	for i, c := range cmds {
		out[i] = f.applyOne(c)
	}
	return out
}

// applyOne decodes and applies one command; it is the prologue every
// command shares. A named call (client id + call id) already applied
// answers its recorded result; otherwise the command's handler runs
// (commands.go) and its result, or its error as a result, is recorded.
// Errors are results, never panics: a bad command must not stop the
// state machine.
func (f *FSM) applyOne(data []byte) *api.CommandResult {
	t, msg, err := Decode(data)
	if err != nil {
		return resultError(err)
	}
	if t == CmdBatch {
		return resultError(errs.New(errs.Invalid, "fsm.FSM.Apply", "", "batches do not nest"))
	}
	var key callKey
	named := false
	if key, named = keyOf(callerOf(msg)); named {
		if prev, ok := f.st.retries.get(key); ok {
			return prev
		}
	}
	res, err := commands[t].apply(f, msg)
	if err != nil {
		res = resultError(err)
	} else if res == nil {
		res = &api.CommandResult{}
	}
	if named && !(errs.Kind(res.ErrorKind) == errs.Precondition && strings.HasSuffix(res.ErrorMsg, SoftLimitPassed)) {
		f.st.retries.put(key, res)
	}
	return res
}

// callerOf is the command's caller: its own, or its create's (PutFile).
func callerOf(msg any) *api.Caller {
	switch c := msg.(type) {
	case interface{ GetCaller() *api.Caller }:
		return c.GetCaller()
	case interface{ GetCreate() *api.CreateCommand }:
		return c.GetCreate().GetCaller()
	}
	return nil
}
