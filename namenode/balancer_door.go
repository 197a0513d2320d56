package namenode

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/balancer"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// newBalancer wires the balancer (package balancer) to this namenode: its
// moves run only while this node is a ready leader out of safe mode.
func (n *Namenode) newBalancer() *balancer.Runner {
	return balancer.New(balancer.Config{Blocks: n.blocks, Log: n.log, Settle: 3 * n.cfg.Blocks.HeartbeatInterval,
		Gate: func() error {
			if !n.isReadyLeader() {
				return errs.New(errs.NotLeader, "StartBalancer", "", "this namenode stopped leading: the run is its leader's own")
			}
			if n.safe.On() {
				// Not the SafeModeException clients wait out: a balancer
				// is refused at once, and a running one stops.
				return errs.New(errs.Precondition, "StartBalancer", "", "refused in safe mode: no replica moves until the leader leaves it ("+n.safe.Status(time.Now()).Message+")")
			}
			return nil
		}})
}

// The balancer's Admin calls run on the leader (the run is the leader's
// own state, not replicated); a follower forwards them.
func (s *adminService) StartBalancer(ctx context.Context, req *api.StartBalancerRequest) (*api.BalancerStatus, error) {
	caller, _ := security.IdentityFromContext(ctx)
	by := caller.String()
	if caller.Role == security.RoleNamenode && req.ForwardedFor != "" {
		by = req.ForwardedFor // the authorizer admitted a member namenode
	}
	if s.n.raft.State() != raft.Leader {
		fwd := &api.StartBalancerRequest{Threshold: req.Threshold, Bandwidth: req.Bandwidth, MaxIterations: req.MaxIterations, ForwardedFor: by}
		return forwardAdmin(ctx, s.n, "StartBalancer", func(c api.AdminClient) (*api.BalancerStatus, error) { return c.StartBalancer(ctx, fwd) })
	}
	st, err := s.n.bal.Start(balancer.Request{Threshold: req.Threshold, Bandwidth: req.Bandwidth, MaxIterations: int(req.MaxIterations), By: by})
	if err != nil {
		return nil, err
	}
	return s.n.balancerStatus(st), nil
}

func (s *adminService) BalancerProgress(ctx context.Context, req *api.BalancerProgressRequest) (*api.BalancerStatus, error) {
	if s.n.raft.State() != raft.Leader {
		return forwardAdmin(ctx, s.n, "BalancerProgress", func(c api.AdminClient) (*api.BalancerStatus, error) { return c.BalancerProgress(ctx, req) })
	}
	return s.n.balancerStatus(s.n.bal.Status()), nil
}

func (s *adminService) StopBalancer(ctx context.Context, req *api.StopBalancerRequest) (*api.BalancerStatus, error) {
	if s.n.raft.State() != raft.Leader {
		return forwardAdmin(ctx, s.n, "StopBalancer", func(c api.AdminClient) (*api.BalancerStatus, error) { return c.StopBalancer(ctx, req) })
	}
	st, err := s.n.bal.Stop()
	if err != nil {
		return nil, err
	}
	return s.n.balancerStatus(st), nil
}

func forwardAdmin(ctx context.Context, n *Namenode, op string, call func(api.AdminClient) (*api.BalancerStatus, error)) (*api.BalancerStatus, error) {
	conn, err := n.leaderConn(ctx, op)
	if err != nil {
		return nil, err
	}
	return call(api.NewAdminClient(conn))
}

func (n *Namenode) balancerStatus(st balancer.Status) *api.BalancerStatus { return st.Proto(n.cfg.ID) }
