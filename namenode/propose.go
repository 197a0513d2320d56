package namenode

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/security"
)

// propose replicates one command for operation op (the RPC that sends it,
// or the command's name when no RPC does: errs/doc.go) and returns the
// FSM's result and the log index it was applied at. On a follower the
// command is forwarded to the leader once; the leader never forwards
// again. Every error of the replication itself names op.
func (n *Namenode) propose(ctx context.Context, op string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, uint64, error) {
	data, err := fsm.Encode(t, msg)
	if err != nil {
		return nil, 0, errs.Wrap(errs.Internal, op, "", err)
	}
	if n.raft.State() == raft.Leader {
		res, idx, err := n.applyLocal(ctx, op, data)
		if !errs.Is(err, errs.NotLeader) {
			return res, idx, err
		}
	}
	return n.forwardApply(ctx, op, data)
}

// applyLocal proposes one encoded command on this node, which must be the
// leader, batched with concurrent proposals.
func (n *Namenode) applyLocal(ctx context.Context, op string, data []byte) (*api.CommandResult, uint64, error) {
	return n.proposer.submit(ctx, op, data)
}

// applyRaft puts one log entry through Raft and returns the FSM's response.
func (n *Namenode) applyRaft(op string, data []byte) (any, uint64, error) {
	f := n.raft.Apply(data, n.cfg.Raft.ApplyTimeout)
	if err := f.Error(); err != nil {
		return nil, 0, n.raftError(op, err)
	}
	switch r := f.Response().(type) {
	case *api.CommandResult:
		return r, f.Index(), fsm.ResultErr(r)
	case fsm.BatchResult:
		return r, f.Index(), nil
	}
	return nil, f.Index(), errs.New(errs.Internal, op, "", "FSM returned no result")
}

// raftError translates hashicorp/raft errors into our kinds, with a leader
// hint where there is one.
func (n *Namenode) raftError(op string, err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// The entry never reached this node's log: safe to send elsewhere.
		e := errs.Wrap(errs.NotLeader, op, "", err)
		e.LeaderHint = n.leaderGRPC()
		return e
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrRaftShutdown):
		// The entry may still commit under the next leader: the outcome is
		// unknown, so it must not be proposed again here. The client's
		// retry (same call id) is answered from the retry cache.
		e := errs.Wrap(errs.Unavailable, op, "", err)
		e.LeaderHint = n.leaderGRPC()
		return e
	}
	return errs.Wrap(errs.Internal, op, "", err)
}

// forwardApply sends an encoded command to the leader.
func (n *Namenode) forwardApply(ctx context.Context, op string, data []byte) (*api.CommandResult, uint64, error) {
	conn, err := n.leaderConn(ctx, op)
	if err != nil {
		return nil, 0, err
	}
	resp, err := api.NewNamenodeInternalClient(conn).Apply(ctx, &api.ApplyRequest{Command: data})
	if err != nil {
		return nil, 0, n.forwardError(op, err)
	}
	res := &api.CommandResult{}
	if err := proto.Unmarshal(resp.Result, res); err != nil {
		return nil, 0, errs.Wrap(errs.Internal, op, "", err)
	}
	// Wait until this node has applied the write too, so a client that
	// reads back from this node sees it.
	if !n.fsm.WaitApplied(ctx.Done(), resp.Index) {
		return res, resp.Index, errs.Wrap(errs.Timeout, op, "", ctx.Err())
	}
	return res, resp.Index, fsm.ResultErr(res)
}

func (n *Namenode) forwardError(op string, err error) error {
	e := &errs.Error{Kind: errs.Unavailable, Op: op, Msg: "leader unreachable", Err: err, LeaderHint: n.leaderGRPC()}
	return e
}

// leaderGRPC returns the leader's gRPC address, or "" if unknown.
func (n *Namenode) leaderGRPC() string {
	if n.raft == nil {
		return ""
	}
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return ""
	}
	if m, ok := n.fsm.Member(string(id)); ok {
		return m.GrpcAddr
	}
	return ""
}

// leaderConn returns a connection to the leader. With no leader known it
// waits (up to two election timeouts, within ctx) for one to be elected,
// then gives up with Unavailable. Its errors name op, the operation that
// needs the leader.
func (n *Namenode) leaderConn(ctx context.Context, op string) (*grpc.ClientConn, error) {
	deadline := time.Now().Add(2 * n.cfg.Raft.Election)
	for {
		addr := n.leaderGRPC()
		if addr != "" && addr != n.grpcAddr {
			return n.peers.get(op, addr)
		}
		if addr == n.grpcAddr && n.raft.State() == raft.Leader {
			return nil, &errs.Error{Kind: errs.Unavailable, Op: op, Msg: "this node became leader; retry"}
		}
		if time.Now().After(deadline) {
			return nil, &errs.Error{Kind: errs.Unavailable, Op: op, Msg: "no leader known"}
		}
		select {
		case <-ctx.Done():
			return nil, &errs.Error{Kind: errs.Unavailable, Op: op, Msg: "no leader known", Err: ctx.Err()}
		case <-n.stop:
			return nil, &errs.Error{Kind: errs.Unavailable, Op: op, Msg: "namenode is stopping"}
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// peerConns caches one gRPC connection per peer address. Calls on them
// carry this namenode's identity: its certificate under mTLS, the simple
// auth metadata (role namenode, name = Raft id) otherwise.
type peerConns struct {
	tls   *tls.Config
	self  security.Identity
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newPeerConns(tlsConf *tls.Config, self security.Identity) *peerConns {
	return &peerConns{tls: tlsConf, self: self, conns: map[string]*grpc.ClientConn{}}
}

// peerIdentity is who this node is to its peers.
func peerIdentity(cfg Config) security.Identity {
	return security.Identity{Role: security.RoleNamenode, Name: cfg.ID}
}

func (p *peerConns) get(op, addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	creds := insecure.NewCredentials()
	opts := []grpc.DialOption{grpc.WithPerRPCCredentials(security.SimpleCredentials(p.self))}
	if p.tls != nil {
		creds, opts = credentials.NewTLS(p.tls), nil
	}
	c, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(creds))...)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, op, addr, err)
	}
	p.conns[addr] = c
	return c, nil
}

func (p *peerConns) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, c := range p.conns {
		c.Close()
		delete(p.conns, a)
	}
}

// readBatcher shares one VerifyLeader round among concurrent linearizable
// reads. A read joins the next round to start (never one already in flight,
// whose index may predate the read); the round records the read index when
// it starts and confirms leadership with a quorum.
type readBatcher struct {
	r       *raft.Raft
	applied func() uint64
	mu      sync.Mutex
	next    *readRound
	running bool
}

type readRound struct {
	done  chan struct{}
	index uint64
	err   error
}

func newReadBatcher(r *raft.Raft, applied func() uint64) *readBatcher {
	return &readBatcher{r: r, applied: applied}
}

// readIndex returns a commit index confirmed by a quorum after the call
// began; op names the operation that reads.
func (b *readBatcher) readIndex(ctx context.Context, op string) (uint64, error) {
	b.mu.Lock()
	if b.next == nil {
		b.next = &readRound{done: make(chan struct{})}
	}
	rd := b.next
	if !b.running {
		b.startLocked()
	}
	b.mu.Unlock()
	select {
	case <-rd.done:
		return rd.index, rd.err
	case <-ctx.Done():
		return 0, errs.Wrap(errs.Timeout, op, "", ctx.Err())
	}
}

func (b *readBatcher) startLocked() {
	rd := b.next
	b.next = nil
	b.running = true
	// Every write acknowledged before this moment has been applied to the
	// leader's FSM (Apply returns after the FSM), and a ready leader has
	// applied everything earlier leaders committed (Barrier). So the
	// leader's applied index is a sufficient read index, and unlike the
	// commit index it never points at a no-op entry that FSMs never see.
	rd.index = b.applied()
	go func() {
		rd.err = b.r.VerifyLeader().Error()
		close(rd.done)
		b.mu.Lock()
		b.running = false
		if b.next != nil {
			b.startLocked()
		}
		b.mu.Unlock()
	}()
}

// readBarrier makes this node ready to serve a read with the requested
// consistency, and returns after the local state is recent enough. Its
// errors name op, the read's RPC.
func (n *Namenode) readBarrier(ctx context.Context, op string, opts *api.ReadOptions) error {
	if opts.GetConsistency() == api.ReadConsistency_READ_CONSISTENCY_STALE {
		if min := opts.GetMinAppliedIndex(); min > 0 && !n.fsm.WaitApplied(ctx.Done(), min) {
			return errs.Newf(errs.Timeout, op, "", "index %d not applied here before the deadline", min)
		}
		return nil
	}
	idx, err := n.linearizableIndex(ctx, op)
	if err != nil {
		return err
	}
	if !n.fsm.WaitApplied(ctx.Done(), max(idx, opts.GetMinAppliedIndex())) {
		return errs.New(errs.Timeout, op, "", "read index not applied before the deadline")
	}
	return nil
}

// linearizableIndex returns the index a linearizable read must wait for.
func (n *Namenode) linearizableIndex(ctx context.Context, op string) (uint64, error) {
	if n.raft.State() == raft.Leader {
		return n.leaderReadIndex(ctx, op)
	}
	conn, err := n.leaderConn(ctx, op)
	if err != nil {
		return 0, err
	}
	resp, err := api.NewNamenodeInternalClient(conn).ReadIndex(ctx, &api.ReadIndexRequest{})
	if err != nil {
		return 0, n.forwardError(op, err)
	}
	return resp.Index, nil
}

func (n *Namenode) leaderReadIndex(ctx context.Context, op string) (uint64, error) {
	for !n.ready.Load() {
		if n.raft.State() != raft.Leader {
			return 0, n.raftError(op, raft.ErrNotLeader)
		}
		select {
		case <-ctx.Done():
			return 0, errs.New(errs.Unavailable, op, "", "leader not ready yet")
		case <-time.After(5 * time.Millisecond):
		}
	}
	idx, err := n.reads.readIndex(ctx, op)
	if err != nil {
		if errs.KindOf(err) == errs.Other {
			return 0, n.raftError(op, err)
		}
		return 0, err
	}
	return idx, nil
}
