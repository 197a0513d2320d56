package client

import (
	"context"

	"github.com/blockfs/blockfs/api"
)

// StartBalancer starts a balancer run on the leader (docs/OPERATIONS.md,
// "Balancer"). Superuser only.
func (c *Client) StartBalancer(ctx context.Context, req *api.StartBalancerRequest) (*api.BalancerStatus, error) {
	return c.balancer(ctx, "StartBalancer", func(ctx context.Context, a api.AdminClient) (*api.BalancerStatus, error) {
		return a.StartBalancer(ctx, req, trailerOpt(ctx))
	})
}

// BalancerProgress returns the leader's current or last balancer run.
func (c *Client) BalancerProgress(ctx context.Context) (*api.BalancerStatus, error) {
	return c.balancer(ctx, "BalancerProgress", func(ctx context.Context, a api.AdminClient) (*api.BalancerStatus, error) {
		return a.BalancerProgress(ctx, &api.BalancerProgressRequest{}, trailerOpt(ctx))
	})
}

// StopBalancer stops the leader's running balancer.
func (c *Client) StopBalancer(ctx context.Context) (*api.BalancerStatus, error) {
	return c.balancer(ctx, "StopBalancer", func(ctx context.Context, a api.AdminClient) (*api.BalancerStatus, error) {
		return a.StopBalancer(ctx, &api.StopBalancerRequest{}, trailerOpt(ctx))
	})
}

func (c *Client) balancer(ctx context.Context, op string, fn func(context.Context, api.AdminClient) (*api.BalancerStatus, error)) (*api.BalancerStatus, error) {
	var out *api.BalancerStatus
	err := c.admin(ctx, op, func(ctx context.Context, a api.AdminClient) error {
		r, err := fn(ctx, a)
		out = r
		return err
	})
	return out, err
}
