// Package raftnettest gives tests an outsider on a Raft port: a client-side
// raft.NetworkTransport that speaks Raft's own RPC encoding over whatever TLS
// config (or none) the test hands it, without checking who answers.
package raftnettest

import (
	"crypto/tls"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/internal/node/raftnet"
)

// outsider dials with a fixed TLS config (nil: plain TCP) and accepts on a
// loopback listener nobody uses.
type outsider struct {
	net.Listener
	cfg *tls.Config
}

func (o *outsider) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if o.cfg == nil {
		return d.Dial("tcp", string(address))
	}
	return tls.DialWithDialer(d, "tcp", string(address), o.cfg)
}

// Transport returns a Raft network transport that dials with cert (nil: no
// TLS at all). The TLS config skips server verification (an attacker does
// not care whom it talks to) and offers Raft's ALPN, so that a refusal is
// about the client's certificate alone, which it always
// presents. Close it when done.
func Transport(cert *tls.Certificate, useTLS bool) (*raft.NetworkTransport, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o := &outsider{Listener: lis}
	if useTLS {
		o.cfg = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{raftnet.ALPN}, MinVersion: tls.VersionTLS12}
		if cert != nil {
			// Always show it, even when the server asks for another CA's
			// certificates (crypto/tls would otherwise send none).
			o.cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
	}
	return raft.NewNetworkTransport(o, 1, 5*time.Second, io.Discard), nil
}
