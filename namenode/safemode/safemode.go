// Package safemode is a namenode leader's safe mode, as HDFS defines it: a
// leader whose block map is still filling from datanode reports is
// read-only and schedules no replication, deletion or lease recovery, so
// that it never acts on a half-known map. It leaves by itself once
// Config.Threshold of the complete blocks have a replica reported and
// Config.Extension has passed since, or when an operator says so; an
// operator can also hold it in safe mode (manual) until told to leave.
package safemode

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// Config is safe mode's thresholds.
type Config struct {
	// Threshold is the fraction of complete blocks that must have a good
	// replica reported (HDFS's dfs.namenode.safemode.threshold-pct).
	Threshold float64
	// Extension is how long safe mode lasts after the threshold is met
	// (dfs.namenode.safemode.extension), so the reports still on their
	// way arrive. A leader whose map already meets every threshold when
	// it takes over (it heard the datanodes all along as a follower) needs
	// none and leaves at once.
	Extension time.Duration
	// MinDatanodes is the live datanodes needed as well
	// (dfs.namenode.safemode.min.datanodes).
	MinDatanodes int
}

// DefaultConfig returns HDFS's defaults: 0.999, 30 s, no datanode floor.
func DefaultConfig() Config {
	return Config{Threshold: 0.999, Extension: 30 * time.Second}
}

// Validate reports a config safe mode cannot run with.
func (c Config) Validate() error {
	const op = "safemode.Config.Validate"
	switch {
	case !(c.Threshold >= 0 && c.Threshold <= 1):
		return errs.Newf(errs.Invalid, op, "", "--safemode-threshold %v: want a fraction from 0 to 1", c.Threshold)
	case c.Extension < 0:
		return errs.Newf(errs.Invalid, op, "", "--safemode-extension %v: want 0 or more", c.Extension)
	case c.MinDatanodes < 0:
		return errs.Newf(errs.Invalid, op, "", "--safemode-min-datanodes %d: want 0 or more", c.MinDatanodes)
	}
	return nil
}

// Counts is what the block map knows: complete blocks with a good replica
// reported (Safe) out of all complete ones (Total), and live datanodes.
type Counts struct {
	Safe, Total, Datanodes int
}

// Mode is one namenode's safe mode. On is lock-free, for the write path;
// the rest is not on a hot path.
type Mode struct {
	cfg Config
	on  atomic.Bool

	mu      sync.Mutex
	manual  bool
	fresh   bool      // entered and not yet updated
	reached time.Time // when the thresholds were met; zero while they are not
	last    Counts
}

// New returns a Mode under cfg (assumed valid), on as a namenode's is when
// it starts: its block map is empty, and its log may still be replaying,
// so it leaves only once the thresholds have held for the extension.
func New(cfg Config) *Mode {
	m := &Mode{cfg: cfg}
	m.on.Store(true)
	return m
}

// On reports whether the namenode is in safe mode.
func (m *Mode) On() bool { return m.on.Load() }

// Enter puts the namenode in safe mode: manual (an operator's; it stays
// until Leave) or a new leader's, which leaves by itself, at its first
// Update already if the map meets the thresholds then (a leader that was
// a follower with every report).
func (m *Mode) Enter(manual bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.on.Load() && m.manual && !manual {
		return // a new leader's start does not lift an operator's hold
	}
	m.manual, m.fresh, m.reached = manual, !manual, time.Time{}
	m.on.Store(true)
}

// Leave takes the namenode out of safe mode, whatever put it there.
func (m *Mode) Leave() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.manual, m.fresh, m.reached = false, false, time.Time{}
	m.on.Store(false)
}

// Update takes the block map's counts as of now and leaves a startup safe
// mode when its thresholds have held for the extension. It reports
// whether this call left safe mode.
func (m *Mode) Update(c Counts, now time.Time) (left bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = c
	fresh := m.fresh
	m.fresh = false
	if !m.on.Load() || m.manual {
		return false
	}
	if !m.met(c) {
		m.reached = time.Time{}
		return false
	}
	if m.reached.IsZero() {
		m.reached = now
	}
	if fresh || now.Sub(m.reached) >= m.cfg.Extension {
		m.reached = time.Time{}
		m.on.Store(false)
		return true
	}
	return false
}

func (m *Mode) met(c Counts) bool {
	return c.Datanodes >= m.cfg.MinDatanodes && (c.Total == 0 || float64(c.Safe) >= m.cfg.Threshold*float64(c.Total))
}

// Status is safe mode as `dfs admin safemode get` shows it.
type Status struct {
	On, Manual bool
	Counts     Counts
	// Message says why the namenode is (still) in safe mode, or that it
	// is off, in HDFS's words.
	Message string
}

// Status returns the state as of the last Update, at now.
func (m *Mode) Status(now time.Time) Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{On: m.on.Load(), Manual: m.manual, Counts: m.last}
	c := m.last
	switch {
	case !st.On:
		st.Message = "Safe mode is OFF."
	case m.manual:
		st.Message = "Safe mode is ON. It was turned on manually. Use \"dfs admin safemode leave\" to turn safe mode off."
	case !m.met(c):
		need := int(m.cfg.Threshold*float64(c.Total) + 0.999999)
		st.Message = fmt.Sprintf("Safe mode is ON. The reported blocks %d needs additional %d blocks to reach the threshold %.4f of total blocks %d.", c.Safe, max(need-c.Safe, 0), m.cfg.Threshold, c.Total)
		if c.Datanodes < m.cfg.MinDatanodes {
			st.Message += fmt.Sprintf(" The number of live datanodes %d needs an additional %d live datanodes to reach the minimum number %d.", c.Datanodes, m.cfg.MinDatanodes-c.Datanodes, m.cfg.MinDatanodes)
		}
		st.Message += " Safe mode will be turned off automatically once the thresholds have been reached."
	default:
		left := max(m.cfg.Extension-now.Sub(m.reached), 0).Round(time.Second)
		st.Message = fmt.Sprintf("Safe mode is ON. The reported blocks %d has reached the threshold %.4f of total blocks %d. Safe mode will be turned off automatically in %v.", c.Safe, m.cfg.Threshold, c.Total, left)
	}
	return st
}

// Refuse is the error for op refused because the namenode is in safe
// mode: errs.Precondition (gRPC FailedPrecondition) naming
// errs.SafeModeException and the status; errs.IsSafeMode knows it.
func (m *Mode) Refuse(op string, now time.Time) error {
	return errs.Newf(errs.Precondition, op, "", "%s: Cannot %s. Name node is in safe mode. %s", errs.SafeModeException, op, m.Status(now).Message)
}
