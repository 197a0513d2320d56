package hdfsrpc

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/hadoopipc"
	"github.com/blockfs/blockfs/security"
)

// fakeService answers the door's calls from fixed replies and records the
// requests.
type fakeService struct {
	api.UnimplementedClientServiceServer
	locs  *api.GetBlockLocationsResponse
	paths []string
}

func (f *fakeService) GetBlockLocations(_ context.Context, r *api.GetBlockLocationsRequest) (*api.GetBlockLocationsResponse, error) {
	f.paths = append(f.paths, r.Path)
	return f.locs, nil
}

func (f *fakeService) GetFileInfo(_ context.Context, r *api.GetFileInfoRequest) (*api.GetFileInfoResponse, error) {
	f.paths = append(f.paths, r.Path)
	return nil, errs.New(errs.NotFound, "GetFileInfo", r.Path, "no such file or directory")
}

func (f *fakeService) Mkdirs(_ context.Context, r *api.MkdirsRequest) (*api.MkdirsResponse, error) {
	f.paths = append(f.paths, r.Path)
	return &api.MkdirsResponse{}, nil
}

// noFiles finds no block's file.
type noFiles struct{}

func (noFiles) FileOfBlock(uint64) (string, uint64, bool) { return "", 0, false }

func (noFiles) FileBlocks(uint64) (string, []*api.Block, bool) { return "", nil, false }

func newDoor(t *testing.T, svc *fakeService, leader bool) *Door {
	t.Helper()
	d, err := New(Config{
		Service:   svc,
		Authorize: func(ctx context.Context, _, _ string, _ any) (context.Context, error) { return ctx, nil },
		Leader:    func() bool { return leader },
		DataAddr:  func(d *api.DatanodeInfo) string { return d.HdfsDataAddr },
		Exception: Exception, BlockPool: "BP-test", Files: noFiles{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func call(t *testing.T, d *Door, method string, req proto.Message) (proto.Message, error) {
	t.Helper()
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return d.Serve(context.Background(), &hadoopipc.Call{Method: method, Body: body, User: "alice"})
}

// threeBlocks is a reply of three blocks on two datanodes.
func threeBlocks(perBlock bool) *api.GetBlockLocationsResponse {
	r := &api.GetBlockLocationsResponse{
		FileLength: 300, BlockIds: []uint64{1, 2, 3}, GenStamps: []uint64{10, 10, 11}, Lengths: []uint64{100, 100, 100},
		ReplicaCounts: []uint32{2, 1, 2}, ReplicaIndexes: []uint32{0, 1, 1, 1, 0},
		Datanodes: []*api.DatanodeInfo{
			{Id: "dn1", Addr: "127.0.0.1:9201", HttpAddr: "127.0.0.1:9301", HdfsDataAddr: "127.0.0.1:9861"},
			{Id: "dn2", Addr: "127.0.0.1:9202", HttpAddr: "127.0.0.1:9302", HdfsDataAddr: "127.0.0.1:9862"},
		},
	}
	if perBlock {
		r.BlockTokens = [][]byte{[]byte("t1"), []byte("t2"), []byte("t3")}
	} else {
		r.Token = []byte("one token for the request")
	}
	return r
}

// TestLocatedBlocksTokens: HDFS-1081 through the door. In per-request and
// cached mode every block carries the same token bytes, in per-block mode
// its own; locations are the datanodes' data doors.
func TestLocatedBlocksTokens(t *testing.T) {
	for _, perBlock := range []bool{false, true} {
		svc := &fakeService{locs: threeBlocks(perBlock)}
		resp, err := call(t, newDoor(t, svc, false), "getBlockLocations", &hdfs.GetBlockLocationsRequestProto{
			Src: proto.String("/f/"), Offset: proto.Uint64(0), Length: proto.Uint64(300),
		})
		if err != nil {
			t.Fatal(err)
		}
		// The reply must marshal and decode as a client decodes it (the
		// door splices pre-encoded bytes: wire.go).
		wire, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		var got hdfs.GetBlockLocationsResponseProto
		if err := proto.Unmarshal(wire, &got); err != nil {
			t.Fatal(err)
		}
		lbs := got.Locations
		if lbs.GetFileLength() != 300 || len(lbs.Blocks) != 3 {
			t.Fatalf("located blocks %v", lbs)
		}
		for i, b := range lbs.Blocks {
			tok := b.BlockToken
			if tok.GetKind() != BlockTokenKind || b.B.GetPoolId() != "BP-test" || b.GetOffset() != uint64(100*i) {
				t.Fatalf("block %d: %v", i, b)
			}
			want := []byte("one token for the request")
			if perBlock {
				want = []byte{'t', byte('1' + i)}
			}
			if !bytes.Equal(tok.Identifier, want) {
				t.Fatalf("per-block %v, block %d token %q, want %q", perBlock, i, tok.Identifier, want)
			}
		}
		if l := lbs.Blocks[1].Locs; len(l) != 1 || l[0].Id.GetDatanodeUuid() != "dn2" || l[0].Id.GetXferPort() != 9862 {
			t.Fatalf("block 1 locations %v", l)
		}
		if svc.paths[0] != "/f" {
			t.Fatalf("the door asked for %q: a trailing slash is dropped", svc.paths[0])
		}
	}
}

// TestDoorAnswers: HDFS's answers for a missing file, a follower's write,
// an undecodable request and an unknown method.
func TestDoorAnswers(t *testing.T) {
	svc := &fakeService{}
	follower := newDoor(t, svc, false)
	resp, err := call(t, follower, "getFileInfo", &hdfs.GetFileInfoRequestProto{Src: proto.String("/nope")})
	if err != nil || resp.(*hdfs.GetFileInfoResponseProto).Fs != nil {
		t.Fatalf("a missing path: %v %v, want an empty reply", resp, err)
	}
	_, err = call(t, follower, "mkdirs", &hdfs.MkdirsRequestProto{Src: proto.String("/d"), Masked: &hdfs.FsPermissionProto{Perm: proto.Uint32(0o755)}, CreateParent: proto.Bool(true)})
	var ex *hadoopipc.Exception
	if !errors.As(err, &ex) || ex.Class != StandbyException || len(svc.paths) != 1 {
		t.Fatalf("a write on a follower: %v, want StandbyException and no call (%v)", err, svc.paths)
	}
	leader := newDoor(t, svc, true)
	if _, err := call(t, leader, "mkdirs", &hdfs.MkdirsRequestProto{Src: proto.String("/d"), Masked: &hdfs.FsPermissionProto{Perm: proto.Uint32(0o755)}, CreateParent: proto.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	_, err = leader.Serve(context.Background(), &hadoopipc.Call{Method: "mkdirs", Body: []byte{0xff, 0xff, 0xff}, User: "alice"})
	if !errors.As(err, &ex) || !strings.Contains(ex.Message, "does not decode") {
		t.Fatalf("garbage request: %v", err)
	}
	if leader.Known("concat") || !leader.Known("getBlockLocations") {
		t.Fatal("Known is wrong")
	}
	for m, w := range Methods() {
		if !leader.Known(m) || (w != ops[m].write) {
			t.Fatalf("Methods: %s", m)
		}
	}
}

// TestEveryMethodHasItsRow: each method the door serves has its row in
// the one policy table, users only, marked a write exactly when it writes.
func TestEveryMethodHasItsRow(t *testing.T) {
	p := security.Policy()
	for m, write := range Methods() {
		r, ok := p[PolicyPrefix+m]
		switch {
		case !ok:
			t.Errorf("%s has no row in security.Policy", m)
		case r.Public || !r.Allows(security.RoleUser) || r.Allows(security.RoleDatanode) || r.Allows(security.RoleNamenode):
			t.Errorf("%s: the row must admit users only: %+v", m, r)
		case r.Write != write:
			t.Errorf("%s: row Write %v, the door's %v", m, r.Write, write)
		}
	}
	if PolicyPrefix != security.HadoopRowPrefix {
		t.Fatal("the door and the policy name the rows differently")
	}
}
