package namenode

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode/decommission"
	"github.com/blockfs/blockfs/security"
)

// The datanode admin states (package decommission) wired in: the block map
// learns the FSM's table as it applies; the Admin calls run on the leader
// (a follower forwards them); the leader's monitor ticks with the work loop.

// AdminStates tells the block map the replicated admin-state table.
func (a blockEventsAdapter) AdminStates(es []*api.AdminStateEntry) {
	a.m.SetAdminStates(decommission.ToAdmin(es))
}

// adminLoop runs the leader's admin-state monitor, outside safe mode.
func (n *Namenode) adminLoop() {
	n.every(n.cfg.WorkInterval, func() {
		if n.isReadyLeader() && !n.safe.On() {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Raft.ApplyTimeout)
			defer cancel()
			n.decom.Tick(ctx)
		}
	})
}

// ReloadExclude rereads the exclude file (--hosts-exclude; the namenode
// command calls it on SIGHUP). On error the old list stays in force.
func (n *Namenode) ReloadExclude() error { return n.decom.ReloadExclude() }

// onLeader runs local on the leader with the caller's name, or forwards
// req to the leader with fwd.
func onLeader[Req any](ctx context.Context, n *Namenode, op string, req Req,
	fwd func(api.AdminClient, context.Context, Req, ...grpc.CallOption) (*api.AdminStateResponse, error),
	local func(by string) (*api.AdminStateResponse, error)) (*api.AdminStateResponse, error) {
	if n.raft.State() == raft.Leader {
		id, _ := security.IdentityFromContext(ctx)
		return local(id.String())
	}
	conn, err := n.leaderConn(ctx, op)
	if err != nil {
		return nil, err
	}
	return fwd(api.NewAdminClient(conn), ctx, req)
}

func (s *adminService) Decommission(ctx context.Context, req *api.DecommissionRequest) (*api.AdminStateResponse, error) {
	return onLeader(ctx, s.n, "Decommission", req, api.AdminClient.Decommission,
		func(by string) (*api.AdminStateResponse, error) {
			return s.n.decom.Decommission(ctx, by, req.Datanodes)
		})
}

func (s *adminService) Recommission(ctx context.Context, req *api.RecommissionRequest) (*api.AdminStateResponse, error) {
	return onLeader(ctx, s.n, "Recommission", req, api.AdminClient.Recommission,
		func(by string) (*api.AdminStateResponse, error) {
			return s.n.decom.Recommission(ctx, by, req.Datanodes)
		})
}

func (s *adminService) Maintenance(ctx context.Context, req *api.MaintenanceRequest) (*api.AdminStateResponse, error) {
	return onLeader(ctx, s.n, "Maintenance", req, api.AdminClient.Maintenance, func(by string) (*api.AdminStateResponse, error) {
		return s.n.decom.Maintenance(ctx, by, req.Datanodes, time.UnixMilli(req.UntilUnixMs), req.MinReplicas)
	})
}

func (s *adminService) RefreshNodes(ctx context.Context, req *api.RefreshNodesRequest) (*api.AdminStateResponse, error) {
	return onLeader(ctx, s.n, "RefreshNodes", req, api.AdminClient.RefreshNodes,
		func(by string) (*api.AdminStateResponse, error) { return s.n.decom.RefreshNodes(ctx, by) })
}
