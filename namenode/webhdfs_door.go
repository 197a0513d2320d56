package namenode

import (
	"math/rand/v2"

	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/webhdfs"
)

// The WebHDFS door (package webhdfs) on this namenode's HTTP port: every
// op runs through the clientService, the entrance of every gRPC call, as
// the caller the authorizer named; the door reaches nothing else of the
// namenode but the datanode picker and the redirect-token issuer below.

// webhdfsRoutes builds the namenode's WebHDFS door and returns its routes.
func (n *Namenode) webhdfsRoutes() map[string]serve.Route {
	return webhdfs.NewNamenodeDoor(webhdfs.NamenodeConfig{
		Service:    newClientService(n),
		Datanodes:  webDatanodes{n},
		Tokens:     n.issuer,
		TLS:        n.cfg.Auth.TLS != nil,
		SimpleAuth: n.cfg.Auth.Mode == AuthSimple,
		BlockPool:  "BP-" + n.cfg.Auth.TrustDomain,
		Log:        n.log,

		DefaultReplication: n.cfg.Namespace.DefaultReplication,
		DefaultBlockSize:   n.cfg.Namespace.DefaultBlockSize,
	}).Routes()
}

// webDatanodes picks the datanode of a WebHDFS data step from the block
// manager's view (webhdfs.DatanodePicker).
type webDatanodes struct{ n *Namenode }

// ReadDatanode: the first live holder that serves HTTP, else any live
// datanode that does.
func (w webDatanodes) ReadDatanode(holders []string) (webhdfs.Target, error) {
	live := w.live()
	for _, id := range holders {
		for _, d := range live {
			if d.ID == id {
				return webTarget(d), nil
			}
		}
	}
	return anyOf("webhdfs.DatanodePicker.ReadDatanode", live)
}

// WriteDatanode: the block manager's choice of a target for a block of
// blockSize (0: the default), else any live datanode that serves HTTP.
func (w webDatanodes) WriteDatanode(blockSize uint64) (webhdfs.Target, error) {
	if blockSize == 0 {
		blockSize = w.n.cfg.Namespace.DefaultBlockSize
	}
	if ts, err := w.n.blocks.ChooseTargets(1, blockSize, nil, ""); err == nil && ts[0].HTTPAddr != "" {
		return webTarget(ts[0]), nil
	}
	return anyOf("webhdfs.DatanodePicker.WriteDatanode", w.live())
}

// live is the live datanodes that serve HTTP.
func (w webDatanodes) live() []blocks.Datanode {
	var live []blocks.Datanode
	for _, d := range w.n.blocks.Datanodes() {
		if d.State == blocks.Live && d.HTTPAddr != "" {
			live = append(live, d)
		}
	}
	return live
}

func anyOf(op string, live []blocks.Datanode) (webhdfs.Target, error) {
	if len(live) == 0 {
		return webhdfs.Target{}, errs.New(errs.Unavailable, op, "", "no live datanode serves HTTP")
	}
	return webTarget(live[rand.IntN(len(live))]), nil
}

func webTarget(d blocks.Datanode) webhdfs.Target {
	return webhdfs.Target{ID: d.ID, HTTPAddr: d.HTTPAddr, DataAddr: d.Addr}
}

// fsmKeys looks up the token-signing public keys every namenode published
// through Raft, so that this namenode checks a redirect token signed by
// any of them (a datanode acting for a WebHDFS user may call any
// namenode). Keys are few; each lookup decodes one under the FSM's read
// lock.
type fsmKeys struct{ n *Namenode }

func (k fsmKeys) Lookup(kid string) (*security.PublicKey, bool) {
	f := k.n.fsm
	if f == nil {
		return nil, false
	}
	b, ok := f.PublicKey(kid)
	if !ok {
		return nil, false
	}
	var pk security.PublicKey
	if pk.UnmarshalBinary(b) != nil {
		return nil, false
	}
	return &pk, true
}
