package client

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/api"
)

// The datanode admin states (docs/OPERATIONS.md, "Decommission" and
// "Maintenance"). Superuser only; datanodes are named by id or data
// address. Each answers the datanodes whose state changed.

// Decommission starts decommissioning the datanodes named; the leader
// refuses, changing nothing, datanodes unknown or dead and sets the
// cluster cannot lose.
func (c *Client) Decommission(ctx context.Context, datanodes []string) (*api.AdminStateResponse, error) {
	return c.adminState(ctx, "Decommission", func(ctx context.Context, a api.AdminClient) (*api.AdminStateResponse, error) {
		return a.Decommission(ctx, &api.DecommissionRequest{Datanodes: datanodes}, trailerOpt(ctx))
	})
}

// Recommission makes the datanodes named normal again.
func (c *Client) Recommission(ctx context.Context, datanodes []string) (*api.AdminStateResponse, error) {
	return c.adminState(ctx, "Recommission", func(ctx context.Context, a api.AdminClient) (*api.AdminStateResponse, error) {
		return a.Recommission(ctx, &api.RecommissionRequest{Datanodes: datanodes}, trailerOpt(ctx))
	})
}

// Maintenance puts the datanodes named in maintenance until until, each
// block keeping minReplicas (0: 1) normal live copies meanwhile.
func (c *Client) Maintenance(ctx context.Context, datanodes []string, until time.Time, minReplicas uint32) (*api.AdminStateResponse, error) {
	return c.adminState(ctx, "Maintenance", func(ctx context.Context, a api.AdminClient) (*api.AdminStateResponse, error) {
		return a.Maintenance(ctx, &api.MaintenanceRequest{Datanodes: datanodes, UntilUnixMs: until.UnixMilli(), MinReplicas: minReplicas}, trailerOpt(ctx))
	})
}

// RefreshNodes makes the leader reread its exclude file and apply it.
func (c *Client) RefreshNodes(ctx context.Context) (*api.AdminStateResponse, error) {
	return c.adminState(ctx, "RefreshNodes", func(ctx context.Context, a api.AdminClient) (*api.AdminStateResponse, error) {
		return a.RefreshNodes(ctx, &api.RefreshNodesRequest{}, trailerOpt(ctx))
	})
}

func (c *Client) adminState(ctx context.Context, op string, call func(context.Context, api.AdminClient) (*api.AdminStateResponse, error)) (*api.AdminStateResponse, error) {
	var out *api.AdminStateResponse
	err := c.admin(ctx, op, func(ctx context.Context, a api.AdminClient) error {
		r, err := call(ctx, a)
		out = r
		return err
	})
	return out, err
}
