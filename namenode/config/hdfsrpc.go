package config

import (
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
)

// HDFSRPC is the namenode's HDFS door (package hdfsrpc): Hadoop IPC on
// its own port, for unmodified HDFS clients.
type HDFSRPC struct {
	// Addr is the door's listen address (--hdfs-rpc-addr); "" leaves the
	// door off.
	Addr string
	// Insecure lets the door bind an address other than loopback
	// (--hdfs-rpc-insecure). The door has only Hadoop's simple
	// authentication: a client names its user and is believed, so on a
	// reachable address anyone can act as anyone, the superuser
	// included. Kerberos is not implemented.
	Insecure bool
}

// Validate refuses a non-loopback Addr without Insecure.
func (c HDFSRPC) Validate() error {
	if c.Addr == "" || c.Insecure {
		return nil
	}
	if !serve.Loopback(c.Addr) {
		return errs.Newf(errs.Invalid, "namenode.Config.Validate", c.Addr,
			"--hdfs-rpc-addr %s is not a loopback address: the HDFS door has only simple authentication (any client can claim any user); pass --hdfs-rpc-insecure to serve it anyway", c.Addr)
	}
	return nil
}
