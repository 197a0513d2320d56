package namenode

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
)

// uiPeerTimeout bounds the status call to each other namenode that the
// namenodes page makes.
const uiPeerTimeout = time.Second

// overviewView is the content of the overview page.
type overviewView struct {
	Cluster                             string
	Term, CommitIndex, Applied, LastLog uint64
	TokenMode, Auth                     string
	Files, Directories, Blocks          int
	Live, Dead                          int
	Capacity, Used, Free                uint64
	UnderReplicated, Missing, Corrupt   int
	PendingReplication, PendingDeletion int
}

func (n *Namenode) uiOverview(w http.ResponseWriter, r *http.Request) error {
	_, term, commit, applied, lastLog := n.raftStats()
	v := overviewView{
		Cluster: n.cfg.Auth.TrustDomain, Term: term, CommitIndex: commit, Applied: applied, LastLog: lastLog,
		TokenMode: n.cfg.Tokens.Mode.String(), Auth: n.cfg.Auth.Mode.String(),
	}
	c := n.fsm.Counts()
	v.Files, v.Directories, v.Blocks = c.Files, c.Directories, c.Blocks
	st := n.blocks.Stats()
	v.Live, v.Dead, v.Capacity, v.Used = st.Live, st.Dead, st.Capacity, st.Used
	if st.Capacity > st.Used {
		v.Free = st.Capacity - st.Used
	}
	v.UnderReplicated, v.Corrupt = st.UnderReplicated, st.Corrupt
	v.PendingReplication, v.PendingDeletion = st.PendingReplication, st.PendingDeletion
	v.Missing = n.blocks.Missing()
	n.render(w, http.StatusOK, "overview", n.newPage(r, "Overview", v))
	return nil
}

// memberView is one Raft member on the namenodes page.
type memberView struct {
	ID, RaftAddr, GRPCAddr string
	// URL is the member's UI ("" when its HTTP address is unknown).
	URL      string
	Suffrage string
	State    string
	Term     uint64
	Applied  uint64
	Self     bool
	Error    string
}

func (n *Namenode) uiNamenodes(w http.ResponseWriter, r *http.Request) error {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return errs.Wrap(errs.Unavailable, "raft configuration", "", err)
	}
	page := n.newPage(r, "Namenodes", nil)
	members := n.fsm.Members()
	servers := cf.Configuration().Servers
	views := make([]memberView, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		v := &views[i]
		v.ID, v.RaftAddr, v.Suffrage = string(s.ID), string(s.Address), strings.ToLower(s.Suffrage.String())
		v.URL = n.memberURL(v.ID, "/", page.user)
		if m := members[v.ID]; m != nil {
			v.GRPCAddr = m.GrpcAddr
		}
		if v.ID == n.cfg.ID {
			st, term, _, applied, _ := n.raftStats()
			v.Self, v.State, v.Term, v.Applied = true, strings.ToLower(st.String()), term, applied
			continue
		}
		if v.GRPCAddr == "" {
			v.State, v.Error = "unknown", "no gRPC address in the member table yet"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.peerState(r.Context(), v)
		}()
	}
	wg.Wait()
	sort.Slice(views, func(i, j int) bool { return views[i].ID < views[j].ID })
	page.Body = views
	n.render(w, http.StatusOK, "namenodes", page)
	return nil
}

// peerState asks namenode v for its own view (ClusterStatus) and fills in
// its term, applied index and state: leader when it names itself leader,
// else follower.
func (n *Namenode) peerState(ctx context.Context, v *memberView) {
	ctx, cancel := context.WithTimeout(ctx, uiPeerTimeout)
	defer cancel()
	conn, err := n.peers.get(v.GRPCAddr)
	var resp *api.ClusterStatusResponse
	if err == nil {
		resp, err = api.NewClientServiceClient(conn).ClusterStatus(ctx, &api.ClusterStatusRequest{})
	}
	if err != nil {
		v.State, v.Error = "unreachable", err.Error()
		return
	}
	v.Term, v.Applied, v.State = resp.Term, resp.AppliedIndex, "follower"
	if resp.LeaderId == v.ID {
		v.State = "leader"
	}
}

// datanodeView is one datanode on the datanodes pages.
type datanodeView struct {
	ID, Addr      string
	MetricsURL    string
	Live          bool
	Capacity      uint64
	Used, Free    uint64
	UsedPercent   string
	Blocks        int
	LastHeartbeat time.Time
	FailedVolumes uint32
}

func newDatanodeView(d blocks.Datanode, replicas int, scheme string) datanodeView {
	v := datanodeView{ID: d.ID, Addr: d.Addr, Live: d.State == blocks.Live, Capacity: d.Capacity, Used: d.Used,
		Blocks: replicas, LastHeartbeat: d.LastHeartbeat, FailedVolumes: d.FailedVolumes, UsedPercent: "-"}
	if d.Capacity > d.Used {
		v.Free = d.Capacity - d.Used
	}
	if d.Capacity > 0 {
		v.UsedPercent = percent(d.Used, d.Capacity)
	}
	if d.HTTPAddr != "" {
		// A datanode's HTTP port is HTTPS when the cluster has TLS, as the
		// namenode's is; /metrics there needs no client certificate.
		v.MetricsURL = (&url.URL{Scheme: scheme, Host: httpHost(d.HTTPAddr, d.Addr), Path: "/metrics"}).String()
	}
	return v
}

// datanodesView is the content of the datanodes page.
type datanodesView struct {
	Live, Dead []datanodeView
}

func (n *Namenode) uiDatanodes(w http.ResponseWriter, r *http.Request) error {
	var v datanodesView
	for _, d := range n.blocks.Datanodes() {
		c, _ := n.blocks.ReplicaCount(d.ID)
		if dv := newDatanodeView(d, c, n.httpScheme()); dv.Live {
			v.Live = append(v.Live, dv)
		} else {
			v.Dead = append(v.Dead, dv)
		}
	}
	n.render(w, http.StatusOK, "datanodes", n.newPage(r, "Datanodes", v))
	return nil
}

func (n *Namenode) uiDatanode(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	d, ok := n.blocks.Datanode(id)
	if !ok {
		return errs.New(errs.NotFound, "datanode", id, "no datanode of this id has registered with this namenode")
	}
	c, _ := n.blocks.ReplicaCount(id)
	n.render(w, http.StatusOK, "datanode", n.newPage(r, "Datanode "+id, newDatanodeView(d, c, n.httpScheme())))
	return nil
}

// percent renders part/whole as a percentage with one decimal.
func percent(part, whole uint64) string {
	return fmt.Sprintf("%.1f%%", float64(part)/float64(whole)*100)
}
