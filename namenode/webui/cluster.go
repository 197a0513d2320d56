package webui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// peerTimeout bounds the status call to each other namenode that the
// namenodes page makes.
const peerTimeout = time.Second

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
	MisReplicated                       int
}

func (u *UI) overview(w http.ResponseWriter, r *http.Request) error {
	nd, c, st := u.status.Node(), u.status.Counts(), u.status.BlockStats()
	v := overviewView{
		Cluster: u.cfg.Cluster, Term: nd.Term, CommitIndex: nd.CommitIndex, Applied: nd.Applied, LastLog: nd.LastLog,
		TokenMode: u.cfg.TokenMode, Auth: u.cfg.Auth,
		Files: c.Files, Directories: c.Directories, Blocks: c.Blocks,
		Live: st.Live, Dead: st.Dead, Capacity: st.Capacity, Used: st.Used,
		UnderReplicated: st.UnderReplicated, Missing: st.Missing, Corrupt: st.Corrupt,
		PendingReplication: st.PendingReplication, PendingDeletion: st.PendingDeletion, MisReplicated: st.MisReplicated,
	}
	if st.Capacity > st.Used {
		v.Free = st.Capacity - st.Used
	}
	u.render(w, http.StatusOK, "overview", u.newPage(r, "Overview", v))
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

func (u *UI) namenodes(w http.ResponseWriter, r *http.Request) error {
	members, err := u.status.Members()
	if err != nil {
		return err
	}
	page := u.newPage(r, "Namenodes", nil)
	self := u.status.Node()
	views := make([]memberView, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		v := &views[i]
		v.ID, v.RaftAddr, v.GRPCAddr, v.Suffrage = m.ID, m.RaftAddr, m.GRPCAddr, m.Suffrage
		v.URL = u.memberURL(m, "/", page.user)
		if v.ID == self.ID {
			v.Self, v.State, v.Term, v.Applied = true, self.State, self.Term, self.Applied
			continue
		}
		if v.GRPCAddr == "" {
			v.State, v.Error = "unknown", "no gRPC address in the member table yet"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.peerState(r.Context(), v)
		}()
	}
	wg.Wait()
	sort.Slice(views, func(i, j int) bool { return views[i].ID < views[j].ID })
	page.Body = views
	u.render(w, http.StatusOK, "namenodes", page)
	return nil
}

// peerState asks namenode v for its own view (ClusterStatus) and fills in
// its term, applied index and state: leader when it names itself leader,
// else follower.
func (u *UI) peerState(ctx context.Context, v *memberView) {
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	resp, err := u.status.PeerStatus(ctx, v.GRPCAddr)
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
	Rack          string
	MetricsURL    string
	Live          bool
	Capacity      uint64
	Used, Free    uint64
	UsedPercent   string
	Blocks        int
	LastHeartbeat time.Time
	FailedVolumes uint32
	AdminState    string
	BlocksLeft    int
	BytesLeft     uint64
}

func newDatanodeView(d Datanode, scheme string) datanodeView {
	v := datanodeView{ID: d.ID, Addr: d.Addr, Rack: d.Rack, Live: d.Live, Capacity: d.Capacity, Used: d.Used,
		Blocks: d.Replicas, LastHeartbeat: d.LastHeartbeat, FailedVolumes: d.FailedVolumes, UsedPercent: "-",
		AdminState: d.AdminState, BlocksLeft: d.BlocksLeft, BytesLeft: d.BytesLeft}
	if v.AdminState == "" {
		v.AdminState = "NORMAL"
	}
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

func (u *UI) datanodes(w http.ResponseWriter, r *http.Request) error {
	var v datanodesView
	for _, d := range u.status.Datanodes() {
		if dv := newDatanodeView(d, u.scheme()); dv.Live {
			v.Live = append(v.Live, dv)
		} else {
			v.Dead = append(v.Dead, dv)
		}
	}
	u.render(w, http.StatusOK, "datanodes", u.newPage(r, "Datanodes", v))
	return nil
}

func (u *UI) datanode(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	d, ok := u.status.Datanode(id)
	if !ok {
		return errs.New(errs.NotFound, "webui.StatusSource.Datanode", id, "no datanode of this id has registered with this namenode")
	}
	u.render(w, http.StatusOK, "datanode", u.newPage(r, "Datanode "+id, newDatanodeView(d, u.scheme())))
	return nil
}

// percent renders part/whole as a percentage with one decimal.
func percent(part, whole uint64) string {
	return fmt.Sprintf("%.1f%%", float64(part)/float64(whole)*100)
}
