package localcluster

import (
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// RaftEvent is one outgoing Raft RPC seen by the in-memory transport of a
// cluster started with Config.InmemRaft (see Config.RaftObserver).
type RaftEvent struct {
	From, To string // Raft server ids / addresses ("nn1", ...)
	Kind     string // "append", "snapshot" or "vote"
	// Term is the sender's term. For "append" and "snapshot" the sender is
	// acting as the leader of Term (only a leader sends them), which is what
	// a one-leader-per-term check needs.
	Term uint64
}

// inmemNet is the Raft network of an InmemRaft cluster: one transport per
// namenode, connected pairwise unless a partition cuts the link. Only Raft
// traffic goes through it; namenode-to-namenode gRPC (forwarding, read
// index) and client traffic stay on loopback TCP.
type inmemNet struct {
	trans   []*raft.InmemTransport // current transport per namenode
	blocked [][]bool               // blocked[i][j]: i cannot send to j
	observe func(RaftEvent)
}

func inmemAddr(i int) raft.ServerAddress { return raft.ServerAddress(fmt.Sprintf("nn%d", i+1)) }

func newInmemNet(n int, observe func(RaftEvent)) *inmemNet {
	net := &inmemNet{trans: make([]*raft.InmemTransport, n), blocked: make([][]bool, n), observe: observe}
	for i := range n {
		net.blocked[i] = make([]bool, n)
	}
	return net
}

// fresh makes a new transport for namenode i (a stopped node's old one was
// closed) and connects it according to the current partition. c.mu held.
func (net *inmemNet) fresh(i int) raft.Transport {
	_, t := raft.NewInmemTransport(inmemAddr(i))
	net.trans[i] = t
	net.rewire()
	return &observedTransport{InmemTransport: t, from: string(inmemAddr(i)), observe: net.observe}
}

// gone disconnects every peer from stopped namenode i; Close disconnects
// its own side.
func (net *inmemNet) gone(i int) {
	for j, t := range net.trans {
		if j != i && t != nil {
			t.Disconnect(inmemAddr(i))
		}
	}
	net.trans[i] = nil
}

// rewire (re)connects every pair of transports that the partition allows
// and disconnects the rest.
func (net *inmemNet) rewire() {
	for i, ti := range net.trans {
		if ti == nil {
			continue
		}
		for j, tj := range net.trans {
			if i == j || tj == nil {
				continue
			}
			if net.blocked[i][j] {
				ti.Disconnect(inmemAddr(j))
			} else {
				ti.Connect(inmemAddr(j), tj)
			}
		}
	}
}

// observedTransport reports the RPCs a node sends; everything else
// (pre-vote, Close, Connect) is the embedded InmemTransport's.
type observedTransport struct {
	*raft.InmemTransport
	from    string
	observe func(RaftEvent)
}

func (o *observedTransport) note(kind string, to raft.ServerAddress, term uint64) {
	if o.observe != nil {
		o.observe(RaftEvent{From: o.from, To: string(to), Kind: kind, Term: term})
	}
}

func (o *observedTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	o.note("append", target, args.Term)
	return o.InmemTransport.AppendEntries(id, target, args, resp)
}

func (o *observedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := o.InmemTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return &observedPipeline{AppendPipeline: p, o: o, target: target}, nil
}

func (o *observedTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	o.note("vote", target, args.Term)
	return o.InmemTransport.RequestVote(id, target, args, resp)
}

func (o *observedTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	o.note("snapshot", target, args.Term)
	return o.InmemTransport.InstallSnapshot(id, target, args, resp, data)
}

type observedPipeline struct {
	raft.AppendPipeline
	o      *observedTransport
	target raft.ServerAddress
}

func (p *observedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.o.note("append", p.target, args.Term)
	return p.AppendPipeline.AppendEntries(args, resp)
}

func (c *Cluster) inmemOnly(op string) {
	if c.net == nil {
		panic("localcluster: " + op + " needs Config.InmemRaft")
	}
}

// Isolate cuts namenode i's Raft links to every other namenode, both
// directions. Only Raft traffic is cut (see Config.InmemRaft).
func (c *Cluster) Isolate(i int) {
	c.inmemOnly("Isolate")
	c.mu.Lock()
	defer c.mu.Unlock()
	for j := range c.net.blocked {
		if j != i {
			c.net.blocked[i][j], c.net.blocked[j][i] = true, true
		}
	}
	c.net.rewire()
}

// Partition splits the namenodes into groups that can reach each other only
// within a group; a namenode in no group is isolated.
func (c *Cluster) Partition(groups ...[]int) {
	c.inmemOnly("Partition")
	c.mu.Lock()
	defer c.mu.Unlock()
	group := make([]int, len(c.net.blocked))
	for i := range group {
		group[i] = -1 - i // alone
	}
	for g, members := range groups {
		for _, i := range members {
			group[i] = g
		}
	}
	for i := range c.net.blocked {
		for j := range c.net.blocked[i] {
			c.net.blocked[i][j] = i != j && group[i] != group[j]
		}
	}
	c.net.rewire()
}

// Heal restores every Raft link.
func (c *Cluster) Heal() {
	c.inmemOnly("Heal")
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.net.blocked {
		clear(c.net.blocked[i])
	}
	c.net.rewire()
}
