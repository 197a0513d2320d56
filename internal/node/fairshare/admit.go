package fairshare

import (
	"cmp"
	"fmt"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/ratelimit"
	"github.com/blockfs/blockfs/security"
)

// Admission is a namenode's check of its users' calls once they are
// authorized (security.AuthConfig.Admit): a write first takes a token of
// its user's bucket (ratelimit, the per-user write rate), then every call
// goes through the Scheduler, which may back the write off. Both refuse
// with an Exhausted error carrying the retry hint. Exempt users (the
// superuser and the supergroup, as HDFS's FairCallQueue leaves its service
// users alone) are neither limited nor counted: the operator's tools are
// trusted with the namenode whole.
type Admission struct {
	limit     *ratelimit.Limiter
	sched     *Scheduler
	exempt    func(user string) bool
	limited   *prometheus.CounterVec
	backedOff *prometheus.CounterVec
}

// NewAdmission returns the Admission of limit and sched, registering its
// counters on reg.
// sched's Rate and MaxUsers, if unset, are limit's (or the defaults').
func NewAdmission(limit ratelimit.Config, sched Config, exempt func(string) bool, reg prometheus.Registerer) *Admission {
	def := DefaultConfig()
	sched.Rate = cmp.Or(sched.Rate, limit.Rate, def.Rate)
	sched.MaxUsers = cmp.Or(sched.MaxUsers, limit.MaxKeys, def.MaxUsers)
	a := &Admission{limit: ratelimit.New(limit), sched: New(sched), exempt: exempt,
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blockfs_namenode_rate_limited_total",
			Help: "Write calls refused with ResourceExhausted (and a retry hint) by their user's --write-rate-per-user, by rpc.",
		}, []string{"rpc"}),
		backedOff: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blockfs_namenode_fair_backoffs_total",
			Help: "Write calls of users heavier than others refused with ResourceExhausted (and a retry hint) while the namenode was loaded (--fair-busy), by rpc.",
		}, []string{"rpc"}),
	}
	reg.MustRegister(a.limited, a.backedOff, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blockfs_namenode_fair_throttle",
		Help: "The share of --write-rate-per-user that users backed off by the fair scheduler are admitted at (1: none throttled).",
	}, a.sched.Throttle))
	return a
}

// Admit admits the call of method by id (a write if write), or refuses it
// with an Exhausted error carrying a retry hint.
func (a *Admission) Admit(id security.Identity, method string, write bool) error {
	if !write && !a.sched.Enabled() || a.exempt(id.Name) {
		return nil
	}
	if write {
		if err := a.take(id.Name, 1, method); err != nil {
			return err
		}
	}
	d := a.sched.Admit(id.Name, write, time.Now())
	if d == 0 {
		return nil
	}
	a.backedOff.WithLabelValues(path.Base(method)).Inc()
	return &errs.Error{Kind: errs.Exhausted, Op: method, RetryAfter: d,
		Msg: fmt.Sprintf("%s is backed off while the namenode is loaded and lighter users are waiting: retry after %v", id.Name, d.Round(time.Millisecond))}
}

// Charge takes n more tokens of user's write bucket for a call Admit
// admitted that stands for n more writes (a PrepareFile of n+1 files), or
// refuses the call as Admit does, taking none. Exempt users pay nothing.
func (a *Admission) Charge(user string, n int, method string) error {
	if a.exempt(user) {
		return nil
	}
	return a.take(user, n, method)
}

// take takes n tokens of user's write bucket for method, or counts the
// refusal and returns it.
func (a *Admission) take(user string, n int, method string) error {
	err := a.limit.AdmitN(user, n, method)
	if err != nil {
		a.limited.WithLabelValues(path.Base(method)).Inc()
	}
	return err
}

// Run runs the scheduler's windows until stop is closed.
func (a *Admission) Run(stop <-chan struct{}) { a.sched.Run(stop) }
