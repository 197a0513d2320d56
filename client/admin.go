package client

import (
	"context"

	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// SetPermission sets the permission bits of p (0..01777).
func (c *Client) SetPermission(ctx context.Context, p string, mode uint32) error {
	return c.call(ctx, "SetPermission", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.SetPermission(ctx, &api.SetPermissionRequest{Path: p, Mode: mode}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// SetOwner sets the owner and group of p; an empty owner or group is left
// unchanged.
func (c *Client) SetOwner(ctx context.Context, p, owner, group string) error {
	return c.call(ctx, "SetOwner", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.SetOwner(ctx, &api.SetOwnerRequest{Path: p, Owner: owner, Group: group}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// CurrentNamenode returns the address of the namenode the client currently
// sends namespace calls to (the one it believes leads).
func (c *Client) CurrentNamenode() string { return c.current.Load().(string) }

// HealthCheck makes one gRPC health check (grpc.health.v1) to addr over the
// client's own connection to it, and fails unless it is SERVING. It does
// not retry: it is the floor under any RPC.
func (c *Client) HealthCheck(ctx context.Context, addr string) error {
	conn, err := c.conn("client.Client.HealthCheck", addr)
	if err != nil {
		return err
	}
	r, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		return errs.FromStatus(err, nil)
	}
	if r.Status != grpc_health_v1.HealthCheckResponse_SERVING {
		return errs.Newf(errs.Unavailable, "client.Client.HealthCheck", addr, "status %v", r.Status)
	}
	return nil
}
