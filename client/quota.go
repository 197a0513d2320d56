package client

import (
	"context"
	"math"

	"github.com/blockfs/blockfs/api"
)

// Quota values with HDFS's meaning (HdfsConstants): QuotaReset clears a
// quota, QuotaDontSet leaves it as it is.
const (
	QuotaReset   int64 = -1
	QuotaDontSet int64 = math.MaxInt64
)

// SetQuota sets directory p's namespace quota ns (names: files and
// directories, p included) and space quota ds (bytes times replication);
// QuotaReset clears one, QuotaDontSet leaves it. Only a superuser may.
// Writes that would pass a quota fail with errs.Exhausted naming HDFS's
// NSQuotaExceededException or DSQuotaExceededException.
func (c *Client) SetQuota(ctx context.Context, p string, ns, ds int64) error {
	return c.call(ctx, "SetQuota", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.SetQuota(ctx, &api.SetQuotaRequest{Path: p, NamespaceQuota: ns, SpaceQuota: ds}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// ContentSummary returns HDFS's content summary of p: a walk of its tree
// on the namenode. Quotas that are not set are -1.
func (c *Client) ContentSummary(ctx context.Context, p string) (*api.ContentSummary, error) {
	var out *api.ContentSummary
	err := c.call(ctx, "GetContentSummary", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.GetContentSummary(ctx, &api.GetContentSummaryRequest{Path: p, Read: c.readOpts()}, trailerOpt(ctx))
		out = r.GetSummary()
		return err
	})
	return out, err
}

// QuotaUsage returns HDFS's quota usage of p (from its counters, without
// a walk, when p has a quota). Quotas that are not set are -1.
func (c *Client) QuotaUsage(ctx context.Context, p string) (*api.QuotaUsage, error) {
	var out *api.QuotaUsage
	err := c.call(ctx, "GetQuotaUsage", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.GetQuotaUsage(ctx, &api.GetQuotaUsageRequest{Path: p, Read: c.readOpts()}, trailerOpt(ctx))
		out = r.GetUsage()
		return err
	})
	return out, err
}
