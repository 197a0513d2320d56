package netfault

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
)

// tokenSample is one GetBlockLocations the token checker made.
type tokenSample struct {
	nn         int
	start, end time.Time // of the GetBlockLocations call
	issued     bool      // the namenode answered with a token
	accepted   bool      // a datanode then served a read with it
}

// cutWindow is a stretch in which namenode nn could hear no other
// namenode: it cannot confirm a leadership, so must issue no token for a
// linearizable read.
type cutWindow struct {
	nn       int
	from, to time.Time
}

// storedToken waits to be replayed after it expires.
type storedToken struct {
	token []byte
	exp   time.Time
	req   *api.ReadBlockRequest
	addrs []string
}

// tokenChecker reads one file through every namenode in turn, as a client
// presenting the tokens it gets: it records which namenode issued a token
// when, checks each against a datanode, and replays every token once it
// has expired (it must be refused). A token from a namenode cut off from
// every peer (cutWindow), or an expired token accepted, is an anomaly.
type tokenChecker struct {
	c    *Cluster
	nns  []api.ClientServiceClient
	path string

	mu        sync.Mutex
	samples   []tokenSample
	waiting   []storedToken
	replayed  int // expired tokens presented
	expiredOK []string
	dns       map[string]api.DataServiceClient
	conns     []*grpc.ClientConn
}

const tokenSkew = time.Second // the cluster's --clock-skew

func (tc *tokenChecker) dn(addr string) (api.DataServiceClient, error) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if d, ok := tc.dns[addr]; ok {
		return d, nil
	}
	conn, err := tc.c.Dial(addr)
	if err != nil {
		return nil, err
	}
	if tc.dns == nil {
		tc.dns = map[string]api.DataServiceClient{}
	}
	tc.conns = append(tc.conns, conn)
	tc.dns[addr] = api.NewDataServiceClient(conn)
	return tc.dns[addr], nil
}

// present asks the datanodes at addrs, in turn, for the block with token:
// accepted, refused (PermissionDenied or Unauthenticated), or neither when
// no datanode answered either way.
func (tc *tokenChecker) present(ctx context.Context, req *api.ReadBlockRequest, addrs []string) (accepted, refused bool) {
	for _, a := range addrs {
		d, err := tc.dn(a)
		if err != nil {
			continue
		}
		rctx, cancel := context.WithTimeout(AsRoot(ctx), 2*time.Second)
		st, err := d.ReadBlock(rctx, req)
		if err == nil {
			_, err = st.Recv()
		}
		cancel()
		switch status.Code(err) {
		case codes.OK:
			return true, false
		case codes.PermissionDenied, codes.Unauthenticated:
			return false, true
		}
	}
	return false, false
}

func (tc *tokenChecker) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		nn := i % len(tc.nns)
		s := tokenSample{nn: nn, start: time.Now()}
		cctx, cancel := context.WithTimeout(AsRoot(ctx), time.Second)
		r, err := tc.nns[nn].GetBlockLocations(cctx, &api.GetBlockLocationsRequest{Path: tc.path}, grpc.WaitForReady(false))
		cancel()
		s.end = time.Now()
		if err == nil && len(r.Token) > 0 && client.ExpandLocations(r) == nil && len(r.Blocks) > 0 {
			s.issued = true
			b := r.Blocks[0]
			req := &api.ReadBlockRequest{Block: b.Block, InodeId: r.InodeId, Length: 1, Token: r.Token}
			var addrs []string
			for _, l := range b.Locations {
				addrs = append(addrs, l.Addr)
			}
			s.accepted, _ = tc.present(ctx, req, addrs)
			if exp, err := tokenExpiry(r.Token); err == nil {
				tc.mu.Lock()
				tc.waiting = append(tc.waiting, storedToken{token: r.Token, exp: exp, req: req, addrs: addrs})
				tc.mu.Unlock()
			}
		}
		tc.mu.Lock()
		tc.samples = append(tc.samples, s)
		tc.mu.Unlock()
		tc.replayExpired(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Millisecond):
		}
	}
}

// replayExpired presents every stored token that has been expired for
// longer than the skew allowance and a second more, once.
func (tc *tokenChecker) replayExpired(ctx context.Context) {
	tc.mu.Lock()
	var due []storedToken
	keep := tc.waiting[:0]
	for _, t := range tc.waiting {
		if time.Now().After(t.exp.Add(tokenSkew + time.Second)) {
			due = append(due, t)
		} else {
			keep = append(keep, t)
		}
	}
	tc.waiting = keep
	tc.mu.Unlock()
	for _, t := range due {
		accepted, refused := tc.present(ctx, t.req, t.addrs)
		tc.mu.Lock()
		if accepted {
			tc.expiredOK = append(tc.expiredOK, fmt.Sprintf("a token that expired at %s was accepted at %s", t.exp.Format(time.TimeOnly), time.Now().Format(time.TimeOnly)))
		}
		if accepted || refused {
			tc.replayed++
		}
		tc.mu.Unlock()
	}
}

// tokenExpiry is the exp claim of a token, read without verifying it (the
// datanodes verify it).
func tokenExpiry(tok []byte) (time.Time, error) {
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(string(tok), &claims); err != nil {
		return time.Time{}, err
	}
	if claims.ExpiresAt == nil {
		return time.Time{}, fmt.Errorf("token without exp")
	}
	return claims.ExpiresAt.Time, nil
}

// tokenVerdict is what the token checker found.
type tokenVerdict struct {
	Asked, Issued, Accepted int // GetBlockLocations calls, tokens, tokens a datanode took
	AskedWhileCut           int // calls wholly inside a cut window of the namenode asked
	IssuedWhileCut          int // ... that got a token: each an anomaly
	ExpiredReplayed         int
	Anomalies               []string
}

// verdict checks the samples against the windows in which namenodes were
// cut off: a call that began more than margin into such a window and
// returned before it ended must not have got a token from the cut
// namenode. (A call that outlasts the window may rightly be served: the
// namenode waits for a leader, and after the heal finds one.)
func (tc *tokenChecker) verdict(cuts []cutWindow) tokenVerdict {
	const margin = 100 * time.Millisecond
	tc.mu.Lock()
	defer tc.mu.Unlock()
	v := tokenVerdict{Asked: len(tc.samples), ExpiredReplayed: tc.replayed, Anomalies: append([]string(nil), tc.expiredOK...)}
	for _, s := range tc.samples {
		cut := false
		for _, w := range cuts {
			cut = cut || w.nn == s.nn && s.start.After(w.from.Add(margin)) && s.end.Before(w.to)
		}
		if cut {
			v.AskedWhileCut++
		}
		if !s.issued {
			continue
		}
		v.Issued++
		if s.accepted {
			v.Accepted++
		}
		for _, w := range cuts {
			if w.nn == s.nn && s.start.After(w.from.Add(margin)) && s.end.Before(w.to) {
				v.IssuedWhileCut++
				v.Anomalies = append(v.Anomalies, fmt.Sprintf("nn%d issued a token (accepted by a datanode: %v) for a call at %s, while cut from every peer since %s",
					s.nn+1, s.accepted, s.start.Format("15:04:05.000"), w.from.Format("15:04:05.000")))
			}
		}
	}
	return v
}

func (tc *tokenChecker) close() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, c := range tc.conns {
		c.Close()
	}
}
