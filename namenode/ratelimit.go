package namenode

import (
	"path"

	"github.com/blockfs/blockfs/internal/base/ratelimit"
	"github.com/blockfs/blockfs/security"
)

// admitWrite returns the authorizer's check of a user's write call: the
// per-user token bucket, its refusals counted by RPC.
func (n *Namenode) admitWrite(c LimitsConfig) func(security.Identity, string) error {
	l := ratelimit.New(ratelimit.Config{Rate: float64(c.WriteRatePerUser), Burst: c.WriteBurstPerUser, MaxKeys: c.WriteRateUsers})
	return func(id security.Identity, method string) error {
		err := l.Admit(id.Name, method)
		if err != nil {
			n.met.rateLimited.WithLabelValues(path.Base(method)).Inc()
		}
		return err
	}
}
