package client

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// unreachable follows one call's run of attempts that never reached a
// namenode (the dial failed: connection refused, no such host), so that
// a client pointed at a wrong address gives up after
// Config.UnreachableRetry instead of retrying until its deadline. An
// attempt that reached a namenode, whatever it answered, ends the run.
type unreachable struct {
	since time.Time // zero: the last attempt reached a namenode
	addrs []string  // the addresses that could not be reached, in order
}

// note records an attempt at addr that failed with err (notSent: it
// never reached the namenode) and returns the call's final error once
// the run has lasted limit (0: never).
func (u *unreachable) note(op, addr string, notSent bool, err error, limit time.Duration) error {
	if !notSent {
		u.since, u.addrs = time.Time{}, u.addrs[:0]
		return nil
	}
	if u.since.IsZero() {
		u.since = time.Now()
	}
	if !slices.Contains(u.addrs, addr) {
		u.addrs = append(u.addrs, addr)
	}
	if limit <= 0 || time.Since(u.since) < limit {
		return nil
	}
	return &errs.Error{Kind: errs.Unavailable, Op: op, Err: unreachableError{err},
		Msg: fmt.Sprintf("could not connect to any namenode (%s) for %v", strings.Join(u.addrs, ", "), limit)}
}

// unreachableError marks the last dial failure of a call that gave up.
type unreachableError struct{ err error }

func (e unreachableError) Error() string { return e.err.Error() }
func (e unreachableError) Unwrap() error { return e.err }

// IsUnreachable reports whether err is a call's failure for no namenode
// being reachable within Config.UnreachableRetry.
func IsUnreachable(err error) bool {
	var u unreachableError
	return errors.As(err, &u)
}
