package localcluster

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// pki is the cluster's certificate authority under Config.MTLS: every node
// and user gets a role certificate of trust domain security.DefaultTrustDomain.
type pki struct {
	ca *security.CA
}

func newPKI() (*pki, error) {
	ca, err := security.GenerateCA("localcluster CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return &pki{ca: ca}, nil
}

// CA returns the cluster CA under Config.MTLS (nil otherwise), so tests can
// issue certificates of their own, rogue ones included.
func (c *Cluster) CA() *security.CA {
	if c.pki == nil {
		return nil
	}
	return c.pki.ca
}

// pair issues a certificate for id and returns the server config (mTLS,
// client certificates required) and the client config presenting it.
func (p *pki) pair(id security.Identity) (server, client *tls.Config, err error) {
	cert, key, err := security.IssueCert(p.ca, security.DefaultTrustDomain, id, []string{"127.0.0.1", "::1", "localhost"})
	if err != nil {
		return nil, nil, err
	}
	if id.Role != security.RoleUser {
		if server, err = security.ServerTLSConfig(p.ca.CertPEM, cert, key); err != nil {
			return nil, nil, err
		}
	}
	client, err = security.ClientTLSConfig(p.ca.CertPEM, cert, key, "")
	return server, client, err
}

// TLSFor returns a client TLS config presenting a certificate of this
// cluster's CA for id (any role), for tests that act as a user, a datanode
// or a namenode. It panics without Config.MTLS.
func (c *Cluster) TLSFor(id security.Identity) (*tls.Config, error) {
	_, cl, err := c.pki.pair(id)
	return cl, err
}

// secureNamenode sets namenode i's auth: mTLS with its role certificate, or
// simple auth on loopback.
func (c *Cluster) secureNamenode(nc *namenode.Config) error {
	if c.groupFile != "" {
		nc.Auth.GroupFile = c.groupFile
	}
	if c.pki == nil {
		nc.Auth.Mode = namenode.AuthSimple
		return nil
	}
	srv, cl, err := c.pki.pair(security.Identity{Role: security.RoleNamenode, Name: nc.ID})
	if err != nil {
		return err
	}
	nc.Auth.Mode, nc.Auth.TLS, nc.Auth.PeerTLS = namenode.AuthMTLS, srv, cl
	return nil
}

// secureDatanode sets a datanode's auth like secureNamenode.
func (c *Cluster) secureDatanode(dc *datanode.Config) error {
	if c.pki == nil {
		dc.Auth = datanode.AuthSimple
		return nil
	}
	srv, cl, err := c.pki.pair(security.Identity{Role: security.RoleDatanode, Name: dc.ID})
	if err != nil {
		return err
	}
	dc.Auth, dc.TLS = datanode.AuthMTLS, srv
	dc.DialOptions = append(dc.DialOptions, grpc.WithTransportCredentials(credentials.NewTLS(cl)))
	return nil
}

// writeGroups writes Config.Groups as the namenodes' group mapping file.
func (c *Cluster) writeGroups() error {
	if c.cfg.Groups == nil {
		return nil
	}
	var b strings.Builder
	for u, gs := range c.cfg.Groups {
		b.WriteString(u + " = " + strings.Join(gs, ", ") + "\n")
	}
	c.groupFile = filepath.Join(c.dir, "groups")
	return os.WriteFile(c.groupFile, []byte(b.String()), 0o644)
}

// ClientAs returns a client acting as user: under Config.MTLS with a user
// certificate of that name, else by simple auth. The caller closes it.
func (c *Cluster) ClientAs(user string) (*client.Client, error) {
	cc, err := c.ClientConfig(user)
	if err != nil {
		return nil, err
	}
	return client.New(cc)
}

// ClientConfig returns the configuration ClientAs(user) uses, for a caller
// that changes it before client.New.
func (c *Cluster) ClientConfig(user string) (client.Config, error) {
	cc := client.DefaultConfig(c.NamenodeAddrs()...)
	cc.User = user
	if c.pki != nil {
		_, cl, err := c.pki.pair(security.Identity{Role: security.RoleUser, Name: user})
		if err != nil {
			return client.Config{}, err
		}
		cc.DialOptions = append(cc.DialOptions, grpc.WithTransportCredentials(credentials.NewTLS(cl)))
	}
	return cc, nil
}
