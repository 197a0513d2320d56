package namenode

import (
	"context"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/namenode/webui"
)

// The web UI's door (package webui): this file gives it the node's status
// and the client service, and is the only place the UI meets the
// namenode's internals. It reads the FSM only through its query methods.

// uiRoutes returns the web UI's endpoints, keyed by their security.Policy
// patterns.
func (n *Namenode) uiRoutes() (map[string]serve.Route, error) {
	cfg := webui.Config{
		Cluster: n.cfg.Auth.TrustDomain, TokenMode: n.cfg.Tokens.Mode.String(), Auth: n.cfg.Auth.Mode.String(),
		SimpleAuth: n.cfg.Auth.Mode == AuthSimple, TLS: n.cfg.Auth.TLS != nil, Log: n.log,
	}
	ui, err := webui.New(cfg, uiSource{n}, newClientService(n))
	if err != nil {
		return nil, err
	}
	return ui.Routes(), nil
}

// uiSource is the namenode as the web UI's webui.StatusSource.
type uiSource struct{ n *Namenode }

func (s uiSource) Node() webui.Node {
	n := s.n
	out := webui.Node{ID: n.cfg.ID, State: "shut down"}
	if n.raft == nil {
		return out
	}
	st, term, commit, applied, lastLog := n.raftStats()
	if st == raft.Shutdown {
		return out
	}
	_, leader := n.raft.LeaderWithID()
	out.State, out.Leader = strings.ToLower(st.String()), string(leader)
	out.Term, out.CommitIndex, out.Applied, out.LastLog = term, commit, applied, lastLog
	return out
}

func (s uiSource) Members() ([]webui.Member, error) {
	n := s.n
	if n.raft == nil {
		return nil, errs.New(errs.Unavailable, "webui.StatusSource.Members", "", "raft is not running")
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, errs.Wrap(errs.Unavailable, "webui.StatusSource.Members", "", err)
	}
	table := n.fsm.Members()
	servers := cf.Configuration().Servers
	out := make([]webui.Member, len(servers))
	for i, sv := range servers {
		m := webui.Member{ID: string(sv.ID), RaftAddr: string(sv.Address), Suffrage: strings.ToLower(sv.Suffrage.String())}
		if known := table[m.ID]; known != nil {
			m.GRPCAddr, m.HTTPAddr = known.GrpcAddr, known.HttpAddr
		}
		out[i] = m
	}
	return out, nil
}

func (s uiSource) PeerStatus(ctx context.Context, grpcAddr string) (*api.ClusterStatusResponse, error) {
	conn, err := s.n.peers.get("ClusterStatus", grpcAddr)
	if err != nil {
		return nil, err
	}
	return api.NewClientServiceClient(conn).ClusterStatus(ctx, &api.ClusterStatusRequest{})
}

func (s uiSource) Counts() webui.Counts {
	c := s.n.fsm.Counts()
	return webui.Counts{Files: c.Files, Directories: c.Directories, Blocks: c.Blocks}
}

func (s uiSource) BlockStats() webui.BlockStats {
	st := s.n.blocks.Stats()
	return webui.BlockStats{
		Live: st.Live, Dead: st.Dead, Capacity: st.Capacity, Used: st.Used,
		UnderReplicated: st.UnderReplicated, Missing: s.n.blocks.Missing(), Corrupt: st.Corrupt,
		PendingReplication: st.PendingReplication, PendingDeletion: st.PendingDeletion, MisReplicated: st.MisReplicated,
	}
}

func (s uiSource) Datanodes() []webui.Datanode {
	ds := s.n.blocks.Datanodes()
	out := make([]webui.Datanode, len(ds))
	for i, d := range ds {
		out[i] = s.datanode(d)
	}
	return out
}

func (s uiSource) Datanode(id string) (webui.Datanode, bool) {
	d, ok := s.n.blocks.Datanode(id)
	if !ok {
		return webui.Datanode{}, false
	}
	return s.datanode(d), true
}

func (s uiSource) datanode(d blocks.Datanode) webui.Datanode {
	c, _ := s.n.blocks.ReplicaCount(d.ID)
	p, _ := s.n.blocks.AdminProgress(d.ID, false)
	return webui.Datanode{
		ID: d.ID, Addr: d.Addr, HTTPAddr: d.HTTPAddr, Live: d.State == blocks.Live,
		Rack: d.Rack, Capacity: d.Capacity, Used: d.Used, Replicas: c, LastHeartbeat: d.LastHeartbeat, FailedVolumes: d.FailedVolumes,
		AdminState: d.Admin.State.HDFS(), BlocksLeft: p.Blocks, BytesLeft: p.Bytes,
	}
}

var _ webui.StatusSource = uiSource{}
