package namenode

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
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
	if n.safe.On() && len(data) > 0 && fsm.CmdType(data[0]).ChangesNamespace() {
		return nil, 0, n.safe.Refuse(op, time.Now())
	}
	return n.proposer.Submit(ctx, op, data)
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

// forwardApply sends an encoded command to the leader. A node that answers
// NotLeader (it lost the leadership, or is handing it over) never put the
// entry in its log, and a leader that could not be dialled never got it,
// so the command goes to the next leader this node learns of, a few
// times. It fails NotLeader, not Unavailable, when none takes it, so that
// callers know it did not happen; a leader's own refusal (safe mode, a
// rate limit) is passed on as that refusal.
func (n *Namenode) forwardApply(ctx context.Context, op string, data []byte) (*api.CommandResult, uint64, error) {
	var resp *api.ApplyResponse
	for attempt := 0; ; attempt++ {
		conn, err := n.leaderConn(ctx, op)
		if err != nil {
			return nil, 0, err
		}
		var trailer metadata.MD
		resp, err = api.NewNamenodeInternalClient(conn).Apply(ctx, &api.ApplyRequest{Command: data}, grpc.Trailer(&trailer))
		if err == nil {
			break
		}
		remote := errs.FromStatus(err, trailer)
		answered := len(trailer.Get(errs.KindKey)) > 0 // the leader's own verdict, not the transport's
		if answered && errs.KindOf(remote) != errs.NotLeader {
			// A refusal (safe mode, a rate limit, ...) is the leader's
			// answer: pass it on as such, not as "unreachable".
			return nil, 0, errs.WithOp(remote, op)
		}
		if !answered && !errs.NotSent(err) {
			return nil, 0, n.forwardError(op, err)
		}
		if attempt == 2 || ctx.Err() != nil {
			e := errs.Wrap(errs.NotLeader, op, "", remote)
			e.LeaderHint = n.leaderGRPC()
			return nil, 0, e
		}
		select { // let this node hear of the next leader
		case <-ctx.Done():
		case <-n.stop:
			return nil, 0, &errs.Error{Kind: errs.Unavailable, Op: op, Msg: "namenode is stopping"}
		case <-time.After(time.Duration(20<<attempt) * time.Millisecond):
		}
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
	return &errs.Error{Kind: errs.Unavailable, Op: op, Msg: "leader unreachable", Err: err, LeaderHint: n.leaderGRPC()}
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
