package namenode_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

// TestGetBlockLocationsRecycledReplies reads files of 1 and 10 blocks over
// gRPC from several goroutines at once. The server recycles each reply once
// it is marshaled (package locreply), so a reply reused too early, or an entry
// shared between replies, shows here as a wrong reply or (under -race) a
// data race.
func TestGetBlockLocationsRecycledReplies(t *testing.T) {
	x, l, _, req := locationsCluster(t, "/f10", 10, 20)
	c := x.client(l)
	paths := []string{req.Path}
	for i := range 20 {
		paths = append(paths, fmt.Sprintf("/load/d%06d/f%06d", i/1000, i%1000))
	}
	want := map[string]*api.GetBlockLocationsResponse{}
	for _, p := range paths {
		r, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: p, Read: req.Read})
		if err != nil {
			t.Fatal(err)
		}
		want[p] = r
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 150 {
				p := paths[rng.IntN(len(paths))]
				r, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: p, Read: req.Read})
				if err == nil {
					err = checkReply(r, want[p])
				}
				if err != nil {
					t.Errorf("%s: %v", p, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// checkReply checks that r is the reply w was for the same file (inode,
// length, blocks, a file token and nothing of another reply: no per-block
// tokens, no CRCs), each block with 3 replicas on distinct datanodes of
// its table, a table that names each datanode once.
func checkReply(r, w *api.GetBlockLocationsResponse) error {
	ids := w.BlockIds
	if r.InodeId != w.InodeId || r.FileLength != w.FileLength || r.UnderConstruction || len(r.Token) == 0 || len(r.BlockTokens) != 0 || len(r.Crc32Cs) != 0 {
		return fmt.Errorf("inode %d, length %d, uc %v, token %d B, %d block tokens, %d CRCs; want inode %d, length %d",
			r.InodeId, r.FileLength, r.UnderConstruction, len(r.Token), len(r.BlockTokens), len(r.Crc32Cs), w.InodeId, w.FileLength)
	}
	if !slices.Equal(r.BlockIds, ids) || !slices.Equal(r.GenStamps, w.GenStamps) || !slices.Equal(r.Lengths, w.Lengths) {
		return fmt.Errorf("blocks %v (%d stamps, %d lengths), want %v", r.BlockIds, len(r.GenStamps), len(r.Lengths), ids)
	}
	if err := checkReplicas(r, len(ids)); err != nil {
		return err
	}
	if len(r.ReplicaIndexes) != 3*len(ids) || r.Header.GetServedBy() == "" {
		return fmt.Errorf("%d replica indexes for %d blocks, header %v", len(r.ReplicaIndexes), len(ids), r.Header)
	}
	seen := map[string]bool{}
	for _, d := range r.Datanodes {
		if seen[d.Id] || d.Addr == "" {
			return fmt.Errorf("datanode table %v: %q twice or without an address", r.Datanodes, d.Id)
		}
		seen[d.Id] = true
	}
	for i := range ids {
		idx := r.ReplicaIndexes[3*i : 3*i+3]
		if idx[0] == idx[1] || idx[1] == idx[2] || idx[0] == idx[2] || slices.Max(idx) >= uint32(len(r.Datanodes)) {
			return fmt.Errorf("block %d: replicas %v in a table of %d", i, idx, len(r.Datanodes))
		}
	}
	return nil
}

// TestServerCodecServesEveryService: the namenode's own codec (package locreply,
// serve.Codec) marshals the health and reflection services' messages too,
// so grpcurl and load balancers' probes keep working.
func TestServerCodecServesEveryService(t *testing.T) {
	x := startCluster(t, 1, func(i int, c *namenode.Config) { c.Logger = quietLogger() })
	ctx := x.root()
	hr, err := healthpb.NewHealthClient(x.conns[0]).Check(ctx, &healthpb.HealthCheckRequest{Service: "blockfs.v1.ClientService"})
	if err != nil || hr.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v, %v", hr, err)
	}
	st, err := reflectionpb.NewServerReflectionClient(x.conns[0]).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	var names []string
	for _, s := range r.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	if !slices.Contains(names, "blockfs.v1.ClientService") {
		t.Fatalf("reflection lists %v", names)
	}
}
