package client

import (
	"context"
	"sync"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// leaseRenewer renews every lease the Client holds with one RenewLease
// call every Config.LeaseRenewInterval, while any Writer is open (HDFS's
// LeaseRenewer).
type leaseRenewer struct {
	c    *Client
	mu   sync.Mutex
	open int
	soft time.Duration // the shortest soft limit a namenode announced
	stop chan struct{}
	done chan struct{}
}

// hold counts an open Writer; softMs is the soft limit the namenode gave
// with it (0: not given).
func (l *leaseRenewer) hold(softMs int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := time.Duration(softMs) * time.Millisecond; d > 0 && (l.soft == 0 || d < l.soft) {
		l.soft = d
	}
	l.open++
	if l.open == 1 {
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		go l.run(l.stop, l.done)
	}
}

// shutdown ends the renewal whatever Writers are open (the Client closes).
func (l *leaseRenewer) shutdown() {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.open, l.stop, l.done = 0, nil, nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (l *leaseRenewer) release() {
	l.mu.Lock()
	var stop, done chan struct{}
	if l.open > 0 {
		l.open--
		if l.open == 0 {
			stop, done = l.stop, l.done
			l.stop, l.done = nil, nil
		}
	}
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// interval is Config.LeaseRenewInterval, or a third of the namenode's
// soft limit when that is shorter.
func (l *leaseRenewer) interval() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	iv := l.c.cfg.LeaseRenewInterval
	if l.soft > 0 {
		iv = min(iv, max(l.soft/3, 10*time.Millisecond))
	}
	return iv
}

func (l *leaseRenewer) run(stop, done chan struct{}) {
	defer close(done)
	iv := l.interval()
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(iv, time.Second))
			_ = l.c.RenewLease(ctx) // a failure is retried at the next tick
			cancel()
		}
	}
}

// RenewLease renews every lease this Client holds (each file it has open
// for writing) with one call. The Writers' background renewal calls it;
// a Client that holds none gets errs.Precondition (LeaseExpired).
func (c *Client) RenewLease(ctx context.Context) error {
	return c.call(ctx, "RenewLease", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.RenewLease(ctx, &api.RenewLeaseRequest{}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// RecoverLease starts recovery of file p, which some client left under
// construction: the namenode has its last block cut on the datanodes to
// the length all replicas hold and closes the file. closed reports that
// the file was closed at once (nothing was left to recover); otherwise
// the recovery runs in the background and WaitClosed waits for it. The
// holder itself and the superuser may recover at once; another user with
// write access only after the holder's soft limit (else errs.Precondition,
// AlreadyBeingCreated). A file not under construction is
// errs.Precondition.
func (c *Client) RecoverLease(ctx context.Context, p string) (closed bool, err error) {
	err = c.call(ctx, "RecoverLease", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.RecoverLease(ctx, &api.RecoverLeaseRequest{Path: p}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		closed = r.GetClosed()
		return err
	})
	return closed, err
}

// WaitClosed polls file p until it is closed (a lease recovery finished)
// or ctx ends.
func (c *Client) WaitClosed(ctx context.Context, p string) error {
	for {
		st, err := c.Stat(ctx, p)
		if err != nil {
			return err
		}
		if !st.UnderConstruction {
			return nil
		}
		select {
		case <-ctx.Done():
			return errs.Wrap(errs.Timeout, "client.Client.WaitClosed", p, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
