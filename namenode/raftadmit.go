package namenode

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/raftnet"
)

// raftAdmitRefresh is how often the admission rereads the Raft
// configuration on its own, a backstop to the rereads on every change
// this node learns of (raftnet's Changed hook, AddServer, RemoveServer).
const raftAdmitRefresh = 500 * time.Millisecond

// raftAdmission decides which namenode certificates may speak Raft to this
// node (under mTLS only): the servers of the latest Raft configuration,
// voters and non-voters, plus the server an AddServer on this leader is
// adding. A node whose
// configuration is empty (it is joining and has received nothing yet)
// admits the servers of the cluster it asked to join (the ClusterStatus of
// --join, read over mTLS before AddServer) and its --peers: the leader
// that will replicate to it is one of those. Once the first configuration
// entry arrives, only the configuration counts.
//
// raftnet asks on every handshake and every RPC, so the answer is an
// atomic load of a set rebuilt from the configuration: after raftnet sees
// an RPC that may carry a configuration and before this node answers it
// (so a removal is in force here before the leader can count this node's
// acknowledgement), after this leader's own AddServer and RemoveServer,
// and every raftAdmitRefresh.
type raftAdmission struct {
	n    *Namenode
	raft atomic.Pointer[raft.Raft]
	cur  atomic.Pointer[admitted]
	// loaded is closed once raft is set and its configuration read: until
	// then (Raft restoring its log and snapshot at start) a handshake
	// waits for it rather than being refused for an empty configuration.
	loaded     chan struct{}
	loadedOnce sync.Once

	mu      sync.Mutex // serializes refreshes; guards pending and seed
	pending map[string]int
	seed    []string
}

// admitted is one reading of the configuration.
type admitted struct {
	servers map[string]raft.ServerAddress
	seed    []string // admitted while servers is empty
	pending []string // in-flight AddServer ids
}

func newRaftAdmission(n *Namenode) *raftAdmission {
	a := &raftAdmission{n: n, pending: map[string]int{}, loaded: make(chan struct{})}
	for _, p := range n.cfg.Raft.Peers {
		a.seed = append(a.seed, p.ID)
	}
	a.cur.Store(&admitted{seed: slices.Clone(a.seed)})
	return a
}

// admit is raftnet's Options.Admit.
func (a *raftAdmission) admit(name string) error {
	const op = "namenode.raftAdmission"
	select {
	case <-a.loaded:
	default:
		t := time.NewTimer(a.n.cfg.Raft.HandshakeTimeout)
		select {
		case <-a.loaded:
		case <-a.n.stop:
		case <-t.C:
		}
		t.Stop()
	}
	c := a.cur.Load()
	if _, ok := c.servers[name]; ok || slices.Contains(c.pending, name) || len(c.servers) == 0 && slices.Contains(c.seed, name) {
		return nil
	}
	return raftnet.Refuse(raftnet.ReasonNotMember, errs.New(errs.Permission, op, name, "not a server of the Raft configuration"))
}

// peerAddr is raftnet's Options.PeerAddr.
func (a *raftAdmission) peerAddr(id string) (raft.ServerAddress, bool) {
	addr, ok := a.cur.Load().servers[id]
	return addr, ok
}

// refresh rereads the latest configuration. It waits for Raft's main
// loop, so it runs on no hot path: only after a change or on the timer.
func (a *raftAdmission) refresh() {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := &admitted{seed: slices.Clone(a.seed)}
	for id := range a.pending {
		next.pending = append(next.pending, id)
	}
	if r := a.raft.Load(); r != nil {
		f := r.GetConfiguration()
		if f.Error() != nil {
			return // shut down: keep the last reading
		}
		next.servers = map[string]raft.ServerAddress{}
		for _, s := range f.Configuration().Servers {
			next.servers[string(s.ID)] = s.Address
		}
	}
	a.cur.Store(next)
}

// setRaft gives the admission its Raft, reads the configuration and lets
// the handshakes waiting for it go on.
func (a *raftAdmission) setRaft(r *raft.Raft) {
	a.raft.Store(r)
	a.refresh()
	a.loadedOnce.Do(func() { close(a.loaded) })
}

// adding admits id while this leader's AddServer for it runs; the
// returned func ends that and rereads the configuration.
func (a *raftAdmission) adding(id string) (done func()) {
	a.mu.Lock()
	a.pending[id]++
	a.mu.Unlock()
	a.refresh()
	return func() {
		a.mu.Lock()
		if a.pending[id]--; a.pending[id] <= 0 {
			delete(a.pending, id)
		}
		a.mu.Unlock()
		a.refresh()
	}
}

// seedFrom admits the servers the cluster at a --join address names, for
// as long as this node's configuration is empty.
func (a *raftAdmission) seedFrom(ctx context.Context, conn api.ClientServiceClient) error {
	st, err := conn.ClusterStatus(ctx, &api.ClusterStatusRequest{})
	if err != nil {
		return err
	}
	a.mu.Lock()
	for _, m := range st.Members {
		if !slices.Contains(a.seed, m.Id) {
			a.seed = append(a.seed, m.Id)
		}
	}
	a.mu.Unlock()
	a.refresh()
	return nil
}

// loop rereads the configuration every raftAdmitRefresh until stop.
func (a *raftAdmission) loop(stop <-chan struct{}) {
	t := time.NewTicker(raftAdmitRefresh)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			a.refresh()
		}
	}
}
