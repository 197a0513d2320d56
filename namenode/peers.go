package namenode

import (
	"crypto/tls"
	"sync"

	"github.com/blockfs/blockfs/internal/node/flow"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// peerConns caches one gRPC connection per peer address. Calls on them
// carry this namenode's identity: its certificate under mTLS, the simple
// auth metadata (role namenode, name = Raft id) otherwise.
type peerConns struct {
	tls   *tls.Config
	self  security.Identity
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newPeerConns(tlsConf *tls.Config, self security.Identity) *peerConns {
	return &peerConns{tls: tlsConf, self: self, conns: map[string]*grpc.ClientConn{}}
}

// peerIdentity is who this node is to its peers.
func peerIdentity(cfg Config) security.Identity {
	return security.Identity{Role: security.RoleNamenode, Name: cfg.ID}
}

func (p *peerConns) get(op, addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	if p.conns == nil {
		return nil, errs.New(errs.Unavailable, op, addr, "namenode is closing")
	}
	creds := insecure.NewCredentials()
	opts := []grpc.DialOption{grpc.WithPerRPCCredentials(security.SimpleCredentials(p.self))}
	if p.tls != nil {
		creds, opts = credentials.NewTLS(p.tls), nil
	}
	c, err := grpc.NewClient(addr, append(append(opts, flow.DialOptions()...), grpc.WithTransportCredentials(creds))...)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, op, addr, err)
	}
	p.conns[addr] = c
	return c, nil
}

func (p *peerConns) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	// A nil map refuses later dials: a call racing shutdown must not
	// open a connection nobody will close.
	p.conns = nil
}
