package namenode

import (
	"path"

	"github.com/blockfs/blockfs/internal/base/ratelimit"
	"github.com/blockfs/blockfs/security"
)

// admitWrite returns the authorizer's check of a user's write call: the
// per-user token bucket, its refusals counted by RPC. The superuser and
// the supergroup are not limited, as HDFS's FairCallQueue leaves its
// service users alone: the operator's tools (and the superuser's own
// jobs) are trusted with the namenode whole.
func (n *Namenode) admitWrite(c LimitsConfig) func(security.Identity, string) error {
	l := ratelimit.New(ratelimit.Config{Rate: float64(c.WriteRatePerUser), Burst: c.WriteBurstPerUser, MaxKeys: c.WriteRateUsers})
	env := authEnv{n}
	return func(id security.Identity, method string) error {
		if env.IsSuperuser(id.Name) {
			return nil
		}
		err := l.Admit(id.Name, method)
		if err != nil {
			n.met.rateLimited.WithLabelValues(path.Base(method)).Inc()
		}
		return err
	}
}
