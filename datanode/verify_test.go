package datanode

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
)

// verifyNN is a fakeNN that also records the verified entries of
// incremental reports.
type verifyNN struct {
	*fakeNN
	verified map[uint64]uint64 // block id -> generation stamp; guarded by fakeNN.mu
}

func startVerifyNN(t *testing.T) *verifyNN {
	f := &fakeNN{registered: map[string]int{}, full: map[string][]*api.ReportedBlock{},
		received: map[string]map[uint64]bool{}, deleted: map[string]map[uint64]bool{}, failedVols: map[string]uint32{}}
	v := &verifyNN{fakeNN: f, verified: map[uint64]uint64{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = lis.Addr().String()
	f.srv = grpc.NewServer()
	api.RegisterDatanodeProtocolServer(f.srv, v)
	api.RegisterClientServiceServer(f.srv, v)
	go f.srv.Serve(lis)
	t.Cleanup(f.srv.Stop)
	return v
}

func (v *verifyNN) IncrementalBlockReport(ctx context.Context, r *api.IncrementalBlockReportRequest) (*api.IncrementalBlockReportResponse, error) {
	v.mu.Lock()
	for _, b := range r.Verified {
		v.verified[b.Id] = b.GenStamp
	}
	v.mu.Unlock()
	return v.fakeNN.IncrementalBlockReport(ctx, r)
}

func (v *verifyNN) queue(c *api.DatanodeCommand) {
	v.mu.Lock()
	v.cmds = append(v.cmds, c)
	v.mu.Unlock()
}

func verifyCmd(id, gen, length uint64) *api.DatanodeCommand {
	return &api.DatanodeCommand{Command: &api.DatanodeCommand_Verify{Verify: &api.VerifyBlockCommand{
		Block: &api.Block{Id: id, GenStamp: gen, Length: length}}}}
}

// TestVerifyBlockCommand: a datanode told to verify a replica re-reads it
// and answers verified, corrupt (a bad-block report) or gone (deleted).
func TestVerifyBlockCommand(t *testing.T) {
	tests := []struct {
		name    string
		corrupt bool // flip a byte on disk first
		missing bool // verify a block the datanode does not hold
		wrongNS bool // the command carries a namespace CRC32C the replica lacks
		answer  func(v *verifyNN, id uint64) bool
	}{
		{"intact replica is verified", false, false, false, func(v *verifyNN, id uint64) bool {
			return v.verified[id] == 1 && len(v.bad) == 0
		}},
		{"corrupt replica is reported bad", true, false, false, func(v *verifyNN, id uint64) bool {
			_, ok := v.verified[id]
			return len(v.bad) == 1 && v.bad[0] == id && !ok
		}},
		// Intact as stored, but not what the writer wrote: a balancer
		// move's copy verified this way must not cost the source.
		{"replica other than the namespace's is reported bad", false, false, true, func(v *verifyNN, id uint64) bool {
			_, ok := v.verified[id]
			return len(v.bad) == 1 && v.bad[0] == id && !ok
		}},
		{"missing replica is reported deleted", false, true, false, func(v *verifyNN, id uint64) bool {
			for _, del := range v.deleted {
				if del[id] {
					return true
				}
			}
			return false
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := startVerifyNN(t)
			d := startDN(t, testConfig(t, v.addr))
			data := randBytes(600)
			id := uint64(21)
			writeOK(t, dataClient(t, d.Addr()), id, data)
			if tc.corrupt {
				info, _ := d.Store().Stat(id)
				corruptOnDisk(t, info.Container+".data", data)
			}
			if tc.missing {
				id = 99
			}
			eventually(t, "registration", func() bool { return v.check(func() bool { return v.registered[d.ID()] > 0 }) })
			c := verifyCmd(id, 1, uint64(len(data)))
			if tc.wrongNS {
				info, _ := d.Store().Stat(id)
				other := info.CRC ^ 1
				c.GetVerify().Block.Crc32C = &other
			} else if !tc.missing {
				info, _ := d.Store().Stat(id)
				c.GetVerify().Block.Crc32C = &info.CRC // the namespace's, as the leader sends it
			}
			v.queue(c)
			eventually(t, "the answer", func() bool { return v.check(func() bool { return tc.answer(v, id) }) })
		})
	}
}
