package security

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/blockfs/blockfs/internal/base/rwlock"
)

// stripedCounter is a prometheus.Counter whose increments go to per-slot
// stripes (rwlock.Counter), for counters bumped on every read request: a
// plain prometheus counter is one atomic word that every core's requests
// write, a cache line bouncing between the cores. Add takes whole counts
// only (the fraction is dropped), which is all its callers add.
type stripedCounter struct {
	desc *prometheus.Desc
	n    rwlock.Counter
}

func newStripedCounter(o prometheus.CounterOpts) *stripedCounter {
	return &stripedCounter{desc: prometheus.NewDesc(prometheus.BuildFQName(o.Namespace, o.Subsystem, o.Name), o.Help, nil, o.ConstLabels)}
}

func (c *stripedCounter) Inc() { c.n.Add(1) }

func (c *stripedCounter) Add(v float64) {
	if v < 0 {
		panic("counter cannot decrease in value")
	}
	c.n.Add(uint64(v))
}

func (c *stripedCounter) Desc() *prometheus.Desc { return c.desc }

func (c *stripedCounter) Write(m *dto.Metric) error {
	return prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.n.Load())).Write(m)
}

func (c *stripedCounter) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *stripedCounter) Collect(ch chan<- prometheus.Metric) { ch <- c }

// register registers c on reg (nil: none). If an equal collector is already
// registered (a second Issuer on the same registry) the existing one is used.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex
			}
		}
		// A conflicting collector under our name: run unregistered rather
		// than fail token handling over metrics.
	}
	return c
}

type issuerMetrics struct {
	signed     *prometheus.CounterVec // label kind: file, block, write
	signedFile prometheus.Counter
	signedBlk  prometheus.Counter
	signedWr   prometheus.Counter
	hits       prometheus.Counter
	misses     prometheus.Counter
	evictions  prometheus.Counter
	signTime   prometheus.Histogram
}

func newIssuerMetrics(reg prometheus.Registerer) *issuerMetrics {
	m := &issuerMetrics{
		signed: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "tokens_signed_total",
			Help: "Block access tokens signed, by kind (file, block, write).",
		}, []string{"kind"})),
		hits: register[prometheus.Counter](reg, newStripedCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "token_cache_hits_total",
			Help: "FileToken calls served from the issuer cache without signing.",
		})),
		misses: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "token_cache_misses_total",
			Help: "FileToken calls in cached mode that had to sign.",
		})),
		evictions: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "token_cache_evictions_total",
			Help: "Issuer cache entries dropped, least recently used first, to make room.",
		})),
		signTime: register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "token_sign_seconds",
			Help:    "Time to build and sign one token.",
			Buckets: prometheus.ExponentialBuckets(5e-6, 2, 14),
		})),
	}
	m.signedFile = m.signed.WithLabelValues("file")
	m.signedBlk = m.signed.WithLabelValues("block")
	m.signedWr = m.signed.WithLabelValues("write")
	return m
}

// Rejection reasons, the values of the verifier's reason label.
const (
	reasonMissing      = "missing"
	reasonTooLarge     = "too_large"
	reasonMalformed    = "malformed"
	reasonBadAlg       = "bad_alg"
	reasonBadSignature = "bad_signature"
	reasonUnknownKey   = "unknown_key"
	reasonKeyWindow    = "key_window"
	reasonExpired      = "expired"
	reasonNotYetValid  = "not_yet_valid"
	reasonBadClaims    = "bad_claims"
	reasonWrongInode   = "wrong_inode"
	reasonWrongMode    = "wrong_mode"
	reasonWrongBlock   = "wrong_block"
	reasonBadRequest   = "bad_request"
)

var allReasons = []string{
	reasonMissing, reasonTooLarge, reasonMalformed, reasonBadAlg, reasonBadSignature,
	reasonUnknownKey, reasonKeyWindow, reasonExpired, reasonNotYetValid, reasonBadClaims,
	reasonWrongInode, reasonWrongMode, reasonWrongBlock, reasonBadRequest,
}

type verifierMetrics struct {
	checks     prometheus.Counter
	hits       prometheus.Counter
	misses     prometheus.Counter
	evictions  prometheus.Counter
	rejections *prometheus.CounterVec
	byReason   map[string]prometheus.Counter // resolved once; read-only after construction
}

func newVerifierMetrics(reg prometheus.Registerer) *verifierMetrics {
	m := &verifierMetrics{
		checks: register[prometheus.Counter](reg, newStripedCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "verify_checks_total",
			Help: "Block access tokens checked.",
		})),
		hits: register[prometheus.Counter](reg, newStripedCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "verify_cache_hits_total",
			Help: "Token checks that skipped the signature thanks to the verified-token cache.",
		})),
		misses: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "verify_cache_misses_total",
			Help: "Token checks with the verified-token cache on that found no entry and checked the signature.",
		})),
		evictions: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "verify_cache_evictions_total",
			Help: "Verified-token cache entries dropped, least recently used first, to make room.",
		})),
		rejections: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "security", Name: "verify_rejections_total",
			Help: "Tokens rejected, by reason.",
		}, []string{"reason"})),
		byReason: map[string]prometheus.Counter{},
	}
	for _, r := range allReasons {
		m.byReason[r] = m.rejections.WithLabelValues(r)
	}
	return m
}
