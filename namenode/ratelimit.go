package namenode

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/internal/base/ratelimit"
	"github.com/blockfs/blockfs/internal/node/fairshare"
)

// newAdmission is the authorizer's check of users' calls: the per-user
// write rate, then the fair scheduler, neither applied to exempt users.
func newAdmission(c LimitsConfig, exempt func(string) bool, reg prometheus.Registerer) *fairshare.Admission {
	return fairshare.NewAdmission(ratelimit.Config{Rate: float64(c.WriteRatePerUser), Burst: c.WriteBurstPerUser, MaxKeys: c.WriteRateUsers}, c.Fair, exempt, reg)
}
