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

// admin runs fn against the Admin service of the namenode believed to
// lead, with the retries of every namespace call (a follower forwards the
// deny-list calls to the leader itself).
func (c *Client) admin(ctx context.Context, op string, fn func(ctx context.Context, a api.AdminClient) error) error {
	return c.call(ctx, op, func(ctx context.Context, _ api.ClientServiceClient) error {
		conn, err := c.conn(op, c.CurrentNamenode())
		if err != nil {
			return err
		}
		return fn(ctx, api.NewAdminClient(conn))
	})
}

// Revoke puts what e names (a certificate serial, a fingerprint, or an
// identity role and name) on the cluster's replicated deny list, and
// returns the log index it was applied at. Superuser only.
func (c *Client) Revoke(ctx context.Context, e *api.RevokedEntry) (uint64, error) {
	var idx uint64
	err := c.admin(ctx, "Revoke", func(ctx context.Context, a api.AdminClient) error {
		r, err := a.Revoke(ctx, &api.RevokeRequest{Entry: e}, trailerOpt(ctx))
		idx = r.GetIndex()
		return err
	})
	return idx, err
}

// Unrevoke lifts the deny-list entry with the key of e. Superuser only.
func (c *Client) Unrevoke(ctx context.Context, e *api.RevokedEntry) (uint64, error) {
	var idx uint64
	err := c.admin(ctx, "Unrevoke", func(ctx context.Context, a api.AdminClient) error {
		r, err := a.Unrevoke(ctx, &api.UnrevokeRequest{Entry: e}, trailerOpt(ctx))
		idx = r.GetIndex()
		return err
	})
	return idx, err
}

// ListRevoked returns the deny list as the namenode serving the call has
// applied it. Superuser only.
func (c *Client) ListRevoked(ctx context.Context) ([]*api.RevokedEntry, error) {
	var out []*api.RevokedEntry
	err := c.admin(ctx, "ListRevoked", func(ctx context.Context, a api.AdminClient) error {
		r, err := a.ListRevoked(ctx, &api.ListRevokedRequest{}, trailerOpt(ctx))
		out = r.GetEntries()
		return err
	})
	return out, err
}

// SafeMode reads (SAFE_MODE_GET), enters or leaves the leader's safe mode
// and returns its state. Superuser only.
func (c *Client) SafeMode(ctx context.Context, action api.SafeModeAction) (*api.SafeModeResponse, error) {
	var out *api.SafeModeResponse
	err := c.admin(ctx, "SafeMode", func(ctx context.Context, a api.AdminClient) error {
		r, err := a.SafeMode(ctx, &api.SafeModeRequest{Action: action}, trailerOpt(ctx))
		out = r
		return err
	})
	return out, err
}
