package datanode

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// fakeNN records what datanodes send and hands out queued commands.
type fakeNN struct {
	api.UnimplementedDatanodeProtocolServer
	api.UnimplementedClientServiceServer
	mu         sync.Mutex
	registered map[string]int
	full       map[string][]*api.ReportedBlock
	received   map[string]map[uint64]bool
	deleted    map[string]map[uint64]bool
	failedVols map[string]uint32
	bad        []uint64
	cmds       []*api.DatanodeCommand
	forget     bool // answer the next heartbeat with reregister
	follower   bool // say this namenode is not the leader
	reports    int  // incremental reports with received blocks
	addr       string
	srv        *grpc.Server
}

func startFakeNN(t *testing.T) *fakeNN {
	f := &fakeNN{registered: map[string]int{}, full: map[string][]*api.ReportedBlock{},
		received: map[string]map[uint64]bool{}, deleted: map[string]map[uint64]bool{}, failedVols: map[string]uint32{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = lis.Addr().String()
	f.srv = grpc.NewServer()
	api.RegisterDatanodeProtocolServer(f.srv, f)
	api.RegisterClientServiceServer(f.srv, f)
	go f.srv.Serve(lis)
	t.Cleanup(f.srv.Stop)
	return f
}

func (f *fakeNN) Register(_ context.Context, r *api.RegisterRequest) (*api.RegisterResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registered[r.Node.Id]++
	return &api.RegisterResponse{NamenodeId: "fake", IsLeader: !f.follower}, nil
}

func (f *fakeNN) Heartbeat(_ context.Context, r *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failedVols[r.DatanodeId] = r.FailedVolumes
	if f.forget {
		f.forget = false
		return &api.HeartbeatResponse{Reregister: true}, nil
	}
	cmds := f.cmds
	f.cmds = nil
	return &api.HeartbeatResponse{Commands: cmds, IsLeader: !f.follower, Keys: [][]byte{signer().pub}, KeysChanged: true}, nil
}

func (f *fakeNN) GetKeys(context.Context, *api.GetKeysRequest) (*api.GetKeysResponse, error) {
	return &api.GetKeysResponse{Keys: [][]byte{signer().pub}}, nil
}

// testSigning mints block tokens the way a namenode does, for the fake
// namenodes' datanodes to check.
type testSigning struct {
	is  *security.Issuer
	pub []byte
}

var signer = sync.OnceValue(func() *testSigning {
	cfg := security.DefaultConfig()
	cfg.NodeID = "fake-nn"
	km, err := security.NewKeyManager(cfg)
	if err != nil {
		panic(err)
	}
	pk, err := km.Rotate(time.Now())
	if err != nil {
		panic(err)
	}
	pub, err := pk.MarshalBinary()
	if err != nil {
		panic(err)
	}
	is, err := security.NewIssuer(cfg, km, nil)
	if err != nil {
		panic(err)
	}
	return &testSigning{is: is, pub: pub}
})

// testInode owns every block these tests write.
const testInode = 77

// copyToken is a namenode's copy token for block id naming targets.
func copyToken(id, gen uint64, targets ...string) []byte {
	tok, err := signer().is.BlockToken(security.CopySubject(targets), testInode, id, gen, security.Copy)
	if err != nil {
		panic(err)
	}
	return tok
}

func blockToken(id, gen uint64, a security.Access) []byte {
	var tok []byte
	var err error
	if a == security.Write {
		tok, err = signer().is.WriteToken("tester", testInode, id, gen)
	} else {
		tok, err = signer().is.BlockToken("tester", testInode, id, gen, a)
	}
	if err != nil {
		panic(err)
	}
	return tok
}

func (f *fakeNN) BlockReport(_ context.Context, r *api.BlockReportRequest) (*api.BlockReportResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full[r.DatanodeId] = r.Blocks
	return &api.BlockReportResponse{}, nil
}

func (f *fakeNN) IncrementalBlockReport(_ context.Context, r *api.IncrementalBlockReportRequest) (*api.IncrementalBlockReportResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.received[r.DatanodeId] == nil {
		f.received[r.DatanodeId], f.deleted[r.DatanodeId] = map[uint64]bool{}, map[uint64]bool{}
	}
	if len(r.Received) > 0 {
		f.reports++
	}
	for _, b := range r.Received {
		f.received[r.DatanodeId][b.Block.Id] = true
	}
	for _, b := range r.Deleted {
		f.deleted[r.DatanodeId][b.Id] = true
	}
	return &api.IncrementalBlockReportResponse{}, nil
}

func (f *fakeNN) ReportBadBlocks(_ context.Context, r *api.ReportBadBlocksRequest) (*api.ReportBadBlocksResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range r.Blocks {
		f.bad = append(f.bad, b.Id)
	}
	return &api.ReportBadBlocksResponse{}, nil
}

func (f *fakeNN) check(fn func() bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fn()
}

func eventually(t *testing.T, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
