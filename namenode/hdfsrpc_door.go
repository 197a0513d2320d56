package namenode

import (
	"context"
	"encoding/hex"
	"net"
	"strconv"

	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/hadoopipc"
	"github.com/blockfs/blockfs/hdfsrpc"
	"github.com/blockfs/blockfs/internal/node/serve"
)

// The HDFS door (package hdfsrpc, served over hadoopipc) on
// --hdfs-rpc-addr: every ClientProtocol method runs through the
// clientService as the connection's user, after its security.Policy row.

func (n *Namenode) startHDFSRPC() error {
	c := n.cfg.HDFSRPC
	if c.Addr == "" {
		return nil
	}
	door, err := hdfsrpc.New(hdfsrpc.Config{
		Service: newClientService(n), Authorize: n.authz.AuthorizeUser, CallContext: hdfsCall,
		Leader: n.Ready, Contact: n.raft, DataAddr: func(d *api.DatanodeInfo) string { return d.HdfsDataAddr },
		Exception: hdfsrpc.Exception, Files: n.fsm, BlockPool: "BP-" + n.cfg.Auth.TrustDomain, Log: n.log,
	})
	if err != nil {
		return err
	}
	ic := hadoopipc.DefaultConfig(hdfsrpc.Protocol, door)
	ic.Exception, ic.Log, ic.Metrics = hdfsrpc.Exception, n.log, hadoopipc.NewMetrics(n.reg)
	if n.hdfsSrv, err = hadoopipc.NewServer(ic); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return errs.Wrap(errs.Unavailable, "namenode.Start", c.Addr, err)
	}
	if c.Insecure && !serve.Loopback(lis.Addr().String()) {
		n.log.Warn("the HDFS door serves simple authentication on a non-loopback address: any client can act as any user", "addr", lis.Addr())
	}
	n.hdfsAddr = lis.Addr().String()
	n.wg.Add(1)
	go func() { defer n.wg.Done(); n.hdfsSrv.Serve(lis) }()
	return nil
}

// HDFSRPCAddr returns the HDFS door's address, or "" when it is off.
func (n *Namenode) HDFSRPCAddr() string { return n.hdfsAddr }

// hdfsCall names a Hadoop call for the retry cache as a gRPC client's
// metadata would (ClientIDKey, CallIDKey).
func hdfsCall(ctx context.Context, clientID []byte, callID int32) context.Context {
	if len(clientID) == 0 || callID < 0 {
		return ctx
	}
	return metadata.NewIncomingContext(ctx, metadata.Pairs(ClientIDKey, hex.EncodeToString(clientID), CallIDKey, strconv.Itoa(int(callID))))
}
