package namenode

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/raftnet"
)

// raftNetTimeout is the I/O timeout of Raft RPCs (what raft.NewTCPTransport
// was given before) and raftNetPool the idle connections kept per peer.
const (
	raftNetTimeout = 10 * time.Second
	raftNetPool    = 3
)

// newRaftTransport binds the Raft port and builds the network transport
// over it: mutual TLS between namenode certificates when the node has TLS
// configs (always under --auth=mtls), otherwise plain TCP, which must be on
// loopback unless InsecureRaft says otherwise. The returned func hands the
// transport the running Raft, whose configuration names the namenode
// expected at each address it dials and, under mTLS, the namenodes it
// accepts (raftadmit.go).
func (n *Namenode) newRaftTransport(logw io.Writer) (*raft.NetworkTransport, func(*raft.Raft), error) {
	cfg := n.cfg
	const op = "namenode.Start"
	lis, err := net.Listen("tcp", cfg.Raft.Addr)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Unavailable, op, cfg.Raft.Addr, err)
	}
	secure := cfg.Auth.TLS != nil && cfg.Auth.PeerTLS != nil
	if !secure {
		if err := n.allowPlainRaft(lis.Addr()); err != nil {
			lis.Close()
			return nil, nil, err
		}
	}
	refused := registerCounterVec(n.reg, prometheus.CounterOpts{
		Name: "blockfs_raft_conn_refused_total",
		Help: "Raft connections refused, by direction (in: accepted, out: dialed) and reason (no_certificate, untrusted, identity, role, name, timeout, ...).",
	}, "direction", "reason")
	rpcRefused := registerCounterVec(n.reg, prometheus.CounterOpts{
		Name: "blockfs_raft_rpc_refused_total",
		Help: "Raft RPCs refused on an accepted mTLS connection (which is then closed), by rpc and reason (header_id, header_addr, not_member, revoked, malformed).",
	}, "rpc", "reason")
	var current atomic.Pointer[raft.Raft]
	o := raftnet.Options{
		ServerTLS:        cfg.Auth.TLS,
		ClientTLS:        cfg.Auth.PeerTLS,
		TrustDomain:      cfg.Auth.TrustDomain,
		HandshakeTimeout: cfg.Raft.HandshakeTimeout,
		Advertise:        cfg.Raft.Advertise,
		Revoked:          n.revoked,
		PeerName:         func(a raft.ServerAddress) (string, bool) { return n.raftPeerName(current.Load(), a) },
		Refused: func(dir, reason string, remote net.Addr, err error) {
			refused.WithLabelValues(dir, reason).Inc()
			n.log.Warn("raft connection refused", "direction", dir, "reason", reason, "remote", remote.String(), "err", err)
		},
	}
	set := current.Store
	if secure {
		a := newRaftAdmission(n)
		n.raftAdmit = a
		o.Admit, o.PeerAddr, o.Changed = a.admit, a.peerAddr, a.refresh
		o.RPCRefused = func(rpc, reason, name string, remote net.Addr, err error) {
			rpcRefused.WithLabelValues(rpc, reason).Inc()
			n.log.Warn("raft RPC refused, connection closed", "rpc", rpc, "reason", reason, "peer", name, "remote", remote.String(), "err", err)
		}
		set = func(r *raft.Raft) {
			current.Store(r)
			a.setRaft(r)
		}
	}
	stream, err := raftnet.New(lis, o)
	if err != nil {
		lis.Close()
		return nil, nil, err
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: raftNetPool,
		Timeout: raftNetTimeout,
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "raft-net", Level: hclog.Info, Output: logw}),
	})
	return trans, set, nil
}

// allowPlainRaft refuses an unauthenticated Raft port off loopback unless
// the operator asked for it, and then says loudly what that means.
func (n *Namenode) allowPlainRaft(addr net.Addr) error {
	a, ok := addr.(*net.TCPAddr)
	if ok && a.IP.IsLoopback() {
		return nil
	}
	if !n.cfg.Raft.Insecure {
		return errs.Newf(errs.Invalid, "namenode.Start", addr.String(),
			"refusing plaintext Raft on a non-loopback address: anyone who reaches it can rewrite the namespace; "+
				"give --tls-ca/--tls-cert/--tls-key (Raft then runs over mTLS), bind loopback, or pass --insecure-raft")
	}
	n.log.Error("INSECURE RAFT: the Raft port accepts unauthenticated peers on a non-loopback address; "+
		"anyone who can reach it can append entries and rewrite the namespace (--insecure-raft)", "raft", addr.String())
	return nil
}

// raftPeerName returns the Raft id the configuration has at addr: the
// running Raft's latest configuration, or before Raft runs, --peers.
func (n *Namenode) raftPeerName(r *raft.Raft, addr raft.ServerAddress) (string, bool) {
	if r != nil {
		if f := r.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				if s.Address == addr {
					return string(s.ID), true
				}
			}
		}
	}
	for _, p := range n.cfg.Raft.Peers {
		if raft.ServerAddress(p.RaftAddr) == addr {
			return p.ID, true
		}
	}
	return "", false
}

// registerCounterVec registers a counter vector on reg, or returns the one
// already there under the same name.
func registerCounterVec(reg prometheus.Registerer, opts prometheus.CounterOpts, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(opts, labels)
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return old
			}
		}
		panic(err)
	}
	return c
}
