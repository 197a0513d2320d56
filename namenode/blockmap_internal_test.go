package namenode

import (
	"bytes"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/namenode/fsm"
)

// testFSM is an FSM over its own block map, fed commands directly.
type testFSM struct {
	t   *testing.T
	f   *fsm.FSM
	bm  *blocks.Manager
	idx uint64
}

func newTestFSM(t *testing.T) *testFSM {
	t.Helper()
	cfg := blocks.DefaultConfig()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return now }
	cfg.Seed = 1
	bm, err := blocks.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"dn1", "dn2"} {
		if err := bm.Register(blocks.Datanode{ID: id, Addr: id + ":1", Capacity: 1 << 40}); err != nil {
			t.Fatal(err)
		}
	}
	return &testFSM{t: t, f: fsm.New(fsm.Config{Superuser: "root", Supergroup: "supergroup", Events: blockEventsAdapter{bm}}), bm: bm}
}

func (x *testFSM) apply(ct fsm.CmdType, msg proto.Message) *api.CommandResult {
	x.t.Helper()
	data, err := fsm.Encode(ct, msg)
	if err != nil {
		x.t.Fatal(err)
	}
	x.idx++
	r, _ := x.f.Apply(&raft.Log{Index: x.idx, Type: raft.LogCommand, Data: data}).(*api.CommandResult)
	if err := fsm.ResultErr(r); err != nil {
		x.t.Fatalf("command %d: %v", ct, err)
	}
	return r
}

// writeFile creates p with one complete block, reported by dn1 and dn2,
// and returns the block id.
func (x *testFSM) writeFile(p string) uint64 {
	root := &api.Caller{User: "root"}
	st := x.apply(fsm.CmdCreate, &api.CreateCommand{Caller: root, Path: p, Replication: 2, BlockSize: 1024}).Status
	b := x.apply(fsm.CmdAddBlock, &api.AddBlockCommand{Caller: root, Path: p, InodeId: st.InodeId}).Block
	b.Length = 10
	for _, dn := range []string{"dn1", "dn2"} {
		x.bm.IncrementalReport(dn, []blocks.Replica{{BlockID: b.Id, GenStamp: b.GenStamp, Length: 10, Inode: st.InodeId}}, nil)
	}
	x.apply(fsm.CmdComplete, &api.CompleteCommand{Caller: root, Path: p, InodeId: st.InodeId, Blocks: []*api.Block{b}})
	return b.Id
}

func (x *testFSM) snapshot() []byte {
	x.t.Helper()
	s, err := x.f.Snapshot()
	if err != nil {
		x.t.Fatal(err)
	}
	defer s.Release()
	store := raft.NewInmemSnapshotStore()
	sink, err := store.Create(raft.SnapshotVersionMax, x.idx, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		x.t.Fatal(err)
	}
	if err := s.Persist(sink); err != nil {
		x.t.Fatal(err)
	}
	_, rc, err := store.Open(sink.ID())
	if err != nil {
		x.t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		x.t.Fatal(err)
	}
	return b
}

// TestRestoreForgetsBlocksOfDeletedFiles: a follower that was cut off while
// the leader deleted a file, and catches up by installing a snapshot, must
// drop the deleted file's blocks from its block map, with their replicas as
// deletion work, not keep them expected forever.
func TestRestoreForgetsBlocksOfDeletedFiles(t *testing.T) {
	leader, follower := newTestFSM(t), newTestFSM(t)
	var keep, gone uint64
	for _, x := range []*testFSM{leader, follower} {
		keep = x.writeFile("/keep")
		gone = x.writeFile("/gone")
	}
	leader.apply(fsm.CmdDelete, &api.DeleteCommand{Caller: &api.Caller{User: "root"}, Path: "/gone"})
	if err := follower.f.Restore(io.NopCloser(bytes.NewReader(leader.snapshot()))); err != nil {
		t.Fatal(err)
	}
	bm := follower.bm
	if st := bm.Stats(); st.Blocks != 1 || st.Replicas != 2 {
		t.Fatalf("stats after restore = %+v, want the one block of /keep", st)
	}
	if l := bm.Locations(gone); len(l) != 0 {
		t.Fatalf("block %d of the deleted file still served from %v", gone, l)
	}
	if l := bm.Locations(keep); len(l) != 2 {
		t.Fatalf("block %d of /keep served from %d datanodes, want 2", keep, len(l))
	}
	// Should this node lead, its work deletes the orphan replicas.
	bm.ComputeWork()
	for _, dn := range []string{"dn1", "dn2"} {
		var del []uint64
		for _, c := range bm.PendingCommands(dn) {
			if c.Kind == blocks.Delete {
				for _, r := range c.Blocks {
					del = append(del, r.BlockID)
				}
			}
		}
		if !slices.Equal(del, []uint64{gone}) {
			t.Fatalf("%s deletes %v, want [%d]", dn, del, gone)
		}
	}
}
