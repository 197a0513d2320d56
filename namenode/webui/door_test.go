package webui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/webui"
	"github.com/blockfs/blockfs/security"
)

// fakeSource is a follower of a two-node cluster with one datanode.
type fakeSource struct{}

func (fakeSource) Node() webui.Node {
	return webui.Node{ID: "nn2", State: "follower", Leader: "nn1", Term: 3, Applied: 7}
}

func (fakeSource) Members() ([]webui.Member, error) {
	return []webui.Member{
		{ID: "nn1", Suffrage: "voter", RaftAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2", HTTPAddr: "127.0.0.1:3"},
		{ID: "nn2", Suffrage: "voter", RaftAddr: "127.0.0.1:4", GRPCAddr: "127.0.0.1:5", HTTPAddr: "127.0.0.1:6"},
	}, nil
}

func (fakeSource) PeerStatus(context.Context, string) (*api.ClusterStatusResponse, error) {
	return &api.ClusterStatusResponse{LeaderId: "nn1", Term: 3, AppliedIndex: 9}, nil
}

func (fakeSource) Counts() webui.Counts         { return webui.Counts{Files: 1, Directories: 2, Blocks: 1} }
func (fakeSource) BlockStats() webui.BlockStats { return webui.BlockStats{Live: 1, MisReplicated: 4} }
func (fakeSource) Datanodes() []webui.Datanode {
	return []webui.Datanode{{ID: "dn1", Live: true, AdminState: "DECOMMISSION_INPROGRESS", BlocksLeft: 3, BytesLeft: 3 << 20}}
}
func (fakeSource) Datanode(id string) (webui.Datanode, bool) {
	return webui.Datanode{ID: id, Live: true, AdminState: "IN_MAINTENANCE"}, id == "dn1"
}

// call is one read the UI made of the client service.
type call struct {
	method string
	path   string
	user   string
	read   *api.ReadOptions
}

// fakeClient is a client service holding /d (a directory) and /d/f (a
// one-block file), refusing every path under /secret, and recording the
// calls it gets with the identity each carries.
type fakeClient struct {
	api.UnimplementedClientServiceServer
	mu    sync.Mutex
	calls []call
	// fail, when set, is what every read answers.
	fail error
}

func (c *fakeClient) record(ctx context.Context, method, path string, read *api.ReadOptions) error {
	id, _ := security.IdentityFromContext(ctx)
	c.mu.Lock()
	c.calls = append(c.calls, call{method, path, id.Name, read})
	c.mu.Unlock()
	switch {
	case c.fail != nil:
		return c.fail
	case strings.HasPrefix(path, "/secret"):
		return errs.New(errs.Permission, "get file info", path, "user="+id.Name+" lacks x")
	case path != "/d" && path != "/d/f":
		return errs.New(errs.NotFound, "get file info", path, "no such file")
	}
	return nil
}

func (c *fakeClient) GetFileInfo(ctx context.Context, req *api.GetFileInfoRequest) (*api.GetFileInfoResponse, error) {
	if err := c.record(ctx, "GetFileInfo", req.Path, req.Read); err != nil {
		return nil, err
	}
	return &api.GetFileInfoResponse{Status: &api.FileStatus{Path: req.Path, IsDir: req.Path == "/d"}}, nil
}

func (c *fakeClient) ListStatus(ctx context.Context, req *api.ListStatusRequest) (*api.ListStatusResponse, error) {
	if err := c.record(ctx, "ListStatus", req.Path, req.Read); err != nil {
		return nil, err
	}
	return &api.ListStatusResponse{Entries: []*api.FileStatus{{Path: "/d/f", Length: 5}}}, nil
}

func (c *fakeClient) GetBlockLocations(ctx context.Context, req *api.GetBlockLocationsRequest) (*api.GetBlockLocationsResponse, error) {
	if err := c.record(ctx, "GetBlockLocations", req.Path, req.Read); err != nil {
		return nil, err
	}
	return &api.GetBlockLocationsResponse{
		BlockIds: []uint64{42}, GenStamps: []uint64{1}, Lengths: []uint64{5}, ReplicaCounts: []uint32{1},
		ReplicaIndexes: []uint32{0}, Datanodes: []*api.DatanodeInfo{{Id: "dn1", State: "live"}},
	}, nil
}

// serveAs returns a handler serving the UI's routes as the authorizer
// would, with the caller id in the request's context.
func serveAs(t *testing.T, ui *webui.UI, id security.Identity) http.Handler {
	t.Helper()
	mux := http.NewServeMux()
	for pattern, rt := range ui.Routes() {
		mux.Handle(pattern, rt.Handler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(security.WithIdentity(r.Context(), id)))
	})
}

// TestBrowseThroughClientService: every browse page reads through the
// client service only, with the identity the HTTP request was authorized
// as and the client service's default (linearizable) consistency, and
// shows the client service's refusals as the UI's error pages.
func TestBrowseThroughClientService(t *testing.T) {
	alice := security.Identity{Role: security.RoleUser, Name: "alice"}
	cases := []struct {
		name   string
		url    string
		fail   error
		status int
		want   string
		calls  []string // method path, in order
	}{
		{"directory", "/browse/d", nil, 200, "f", []string{"GetFileInfo /d", "ListStatus /d"}},
		{"file", "/browse/d/f", nil, 200, "Blocks (1)", []string{"GetFileInfo /d/f", "GetBlockLocations /d/f"}},
		{"refused", "/browse/secret/x", nil, 403, "user=alice lacks x", []string{"GetFileInfo /secret/x"}},
		{"missing", "/browse/nowhere", nil, 404, "no such file", []string{"GetFileInfo /nowhere"}},
		{"no leader for the read barrier", "/browse/d", errs.New(errs.Unavailable, "GetFileInfo", "", "leader unreachable"), 503, "leader unreachable", []string{"GetFileInfo /d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := &fakeClient{fail: tc.fail}
			ui, err := webui.New(webui.Config{SimpleAuth: true}, fakeSource{}, cs)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			serveAs(t, ui, alice).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.url, nil))
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("status %d (want %d), body lacks %q?\n%s", rec.Code, tc.status, tc.want, rec.Body)
			}
			var got []string
			for _, c := range cs.calls {
				got = append(got, c.method+" "+c.path)
				if c.user != "alice" {
					t.Errorf("%s %s ran as %q, want alice", c.method, c.path, c.user)
				}
				if c.read.GetConsistency() != api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE {
					t.Errorf("%s %s read %v, want linearizable", c.method, c.path, c.read.GetConsistency())
				}
			}
			if strings.Join(got, ", ") != strings.Join(tc.calls, ", ") {
				t.Errorf("calls %v, want %v", got, tc.calls)
			}
		})
	}
}

// TestClusterPagesFromSource: the cluster pages show the status source,
// and a follower links to the leader's UI from the member table.
func TestClusterPagesFromSource(t *testing.T) {
	ui, err := webui.New(webui.Config{Cluster: "example.test"}, fakeSource{}, &fakeClient{})
	if err != nil {
		t.Fatal(err)
	}
	h := serveAs(t, ui, security.Identity{Role: security.RoleUser, Name: "bob"})
	for _, tc := range []struct {
		url    string
		status int
		want   []string
	}{
		{"/", 200, []string{"example.test", "follower-banner", `href="http://127.0.0.1:3/"`, "user/bob", `id="mis-replicated">4<`}},
		{"/namenodes", 200, []string{"nn1", "leader", "(this node)", ">9<"}},
		{"/datanodes", 200, []string{"dn1", "Live (1)", "DECOMMISSION_INPROGRESS (3 blocks, 3.0 MiB left)"}},
		{"/datanodes/dn1", 200, []string{`id="dn-state">live`, `id="dn-admin">IN_MAINTENANCE`}},
		{"/datanodes/dn9", 404, []string{"dn9"}},
		{"/static/style.css", 200, []string{"font"}},
		{"/static/layout.html", 404, nil},
	} {
		t.Run(tc.url, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.url, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d:\n%s", rec.Code, tc.status, rec.Body)
			}
			for _, w := range tc.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("page lacks %q:\n%s", w, rec.Body)
				}
			}
		})
	}
}
