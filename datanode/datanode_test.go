package datanode

import (
	"bytes"
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

func TestBadNodeKeyMatchesClient(t *testing.T) {
	if BadNodeKey != client.BadNodeKey {
		t.Fatalf("datanode.BadNodeKey %q != client.BadNodeKey %q", BadNodeKey, client.BadNodeKey)
	}
}

func TestWriteBlockBadInput(t *testing.T) {
	d := startDN(t, testConfig(t))
	c := dataClient(t, d.Addr())
	data := randBytes(1000)
	tests := []struct {
		name string
		id   uint64
		msgs []*api.WriteBlockRequest
		code codes.Code
		msg  string
	}{
		{"no header", 1, packets(data, 512), codes.InvalidArgument, "first message must be the header"},
		{"empty stream", 2, nil, codes.InvalidArgument, "first message must be the header"},
		{"chunk past length", 3, []*api.WriteBlockRequest{hdr(3, 1, 500), pkt(0, 0, data[:512], false)}, codes.InvalidArgument, "block 3: packet at offset 0: chunk past the declared length 500"},
		{"short write", 4, []*api.WriteBlockRequest{hdr(4, 1, 1000), pkt(0, 0, data[:512], false), pkt(1, 512, data[512:999], true)}, codes.InvalidArgument, "block 4: short write: last packet ends at offset 999"},
		{"header twice", 5, []*api.WriteBlockRequest{hdr(5, 1, 10), hdr(5, 1, 10)}, codes.InvalidArgument, "header sent twice"},
		{"too large", 6, []*api.WriteBlockRequest{hdr(6, 1, 2<<30)}, codes.InvalidArgument, "maximum block size"},
		{"stops mid-block", 7, []*api.WriteBlockRequest{hdr(7, 1, 1000), pkt(0, 0, data[:512], false)}, codes.InvalidArgument, "block 7: stream ended at offset 512 of 1000"},
		{"wrong offset", 8, []*api.WriteBlockRequest{hdr(8, 1, 1000), pkt(0, 0, data[:512], false), pkt(1, 500, data[500:], true)}, codes.InvalidArgument, "block 8: packet 1 at wrong offset 500: expected 512"},
		{"out of order", 9, []*api.WriteBlockRequest{hdr(9, 1, 1000), pkt(1, 0, data, true)}, codes.InvalidArgument, "out of order"},
		{"not whole chunks", 10, []*api.WriteBlockRequest{hdr(10, 1, 1000), pkt(0, 0, data[:300], false)}, codes.InvalidArgument, "not whole chunks"},
		{"missing crc", 11, []*api.WriteBlockRequest{hdr(11, 1, 1000), badCRC(pkt(0, 0, data, true), func(p *api.WritePacket) { p.Crcs = p.Crcs[:1] })}, codes.InvalidArgument, "1 CRCs for 2 chunks"},
		{"bad crc", 12, []*api.WriteBlockRequest{hdr(12, 1, 1000), pkt(0, 0, data[:512], false), badCRC(pkt(1, 512, data[512:], true), func(p *api.WritePacket) { p.Crcs[0] ^= 1 })}, codes.DataLoss, "block 12: chunk at offset 512: checksum mismatch"},
		{"bad bytes per checksum", 13, []*api.WriteBlockRequest{withBPC(hdr(13, 1, 1000), 100)}, codes.InvalidArgument, "bytes per checksum 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := write(t, c, tt.msgs...)
			st := status.Convert(err)
			if st.Code() != tt.code || !bytes.Contains([]byte(st.Message()), []byte(tt.msg)) {
				t.Fatalf("got %v, want %v %q", err, tt.code, tt.msg)
			}
			if _, ok := d.Store().Stat(tt.id); ok {
				t.Fatalf("block %d became visible", tt.id)
			}
			if _, err := read(c, tt.id, 1, 0, 0); status.Code(err) != codes.NotFound {
				t.Fatalf("read of block %d: %v, want NotFound", tt.id, err)
			}
		})
	}
}

func TestWriteReadAndErrors(t *testing.T) {
	d := startDN(t, testConfig(t))
	c := dataClient(t, d.Addr())
	data := randBytes(1000)
	resp := writeOK(t, c, 10, data)
	if resp.Length != 1000 || resp.Crc32C != chunks.CRC(data) || len(resp.StoredOn) != 1 || resp.StoredOn[0] != d.ID() {
		t.Fatalf("bad response %+v", resp)
	}
	if info, _ := d.Store().Stat(10); info.Inode != 77 || info.GenStamp != 1 {
		t.Fatalf("stored meta %+v", info)
	}
	writeOK(t, c, 11, nil) // an empty block

	// Idempotent rewrite; a different replica under the same id is refused.
	writeOK(t, c, 10, data)
	other := append([]byte{}, data...)
	other[0] ^= 1
	_, _, err := write(t, c, msgs(hdr(10, 1, 1000), other)...)
	if status.Code(err) != codes.AlreadyExists {
		t.Fatalf("different content: %v, want AlreadyExists", err)
	}
	_, _, err = write(t, c, msgs(hdr(10, 2, 1000), data)...)
	if status.Code(err) != codes.AlreadyExists {
		t.Fatalf("different gen stamp: %v, want AlreadyExists", err)
	}

	tests := []struct {
		name            string
		id, gen, off, n uint64
		code            codes.Code
		want            []byte
	}{
		{"whole", 10, 1, 0, 0, codes.OK, data},
		{"range", 10, 1, 100, 350, codes.OK, data[100:450]},
		{"tail", 10, 1, 900, 0, codes.OK, data[900:]},
		{"at end", 10, 1, 1000, 0, codes.OK, nil},
		{"empty block", 11, 1, 0, 0, codes.OK, nil},
		{"past end", 10, 1, 1001, 0, codes.InvalidArgument, nil},
		{"range past end", 10, 1, 900, 101, codes.InvalidArgument, nil},
		{"unknown", 999, 1, 0, 0, codes.NotFound, nil},
		{"stale gen", 10, 2, 0, 0, codes.NotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := read(c, tt.id, tt.gen, tt.off, tt.n)
			if status.Code(err) != tt.code {
				t.Fatalf("got %v, want %v", err, tt.code)
			}
			if err == nil && !bytes.Equal(got, tt.want) {
				t.Fatalf("got %d bytes, want %d", len(got), len(tt.want))
			}
			if tt.name == "stale gen" && !bytes.Contains([]byte(status.Convert(err).Message()), []byte("stale generation")) {
				t.Fatalf("message %q", status.Convert(err).Message())
			}
		})
	}
}

func TestPipeline(t *testing.T) {
	a, b, cc := startDN(t, testConfig(t)), startDN(t, testConfig(t)), startDN(t, testConfig(t))
	info := func(d *Datanode) *api.DatanodeInfo { return &api.DatanodeInfo{Id: d.ID(), Addr: d.Addr()} }
	c := dataClient(t, a.Addr())
	data := randBytes(2500)
	resp := writeOK(t, c, 1, data, info(b), info(cc))
	if len(resp.StoredOn) != 3 || resp.StoredOn[0] != a.ID() || resp.StoredOn[1] != b.ID() || resp.StoredOn[2] != cc.ID() {
		t.Fatalf("stored on %v", resp.StoredOn)
	}
	for _, d := range []*Datanode{a, b, cc} {
		got, err := read(dataClient(t, d.Addr()), 1, 1, 0, 0)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("replica on %s: %v", d.ID(), err)
		}
	}

	// A dead third node: the write fails Unavailable naming it, and no
	// replica of the block stays visible anywhere.
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := lis.Addr().String()
	lis.Close()
	dead := &api.DatanodeInfo{Id: "dead-node", Addr: deadAddr}
	_, tr, err := write(t, c, append([]*api.WriteBlockRequest{{Msg: &api.WriteBlockRequest_Header{Header: &api.WriteBlockHeader{
		Block: &api.Block{Id: 3, GenStamp: 1, Length: 2500}, InodeId: testInode, Token: blockToken(3, 1, security.Write),
		Pipeline: []*api.DatanodeInfo{info(b), dead}}}}}, packets(data, 1024)...)...)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("dead downstream: %v, want Unavailable", err)
	}
	if v := tr.Get(client.BadNodeKey); len(v) != 1 || v[0] != "dead-node" {
		t.Fatalf("bad node trailer %v", v)
	}
	for _, d := range []*Datanode{a, b} {
		if _, ok := d.Store().Stat(3); ok {
			t.Fatalf("failed write visible on %s", d.ID())
		}
	}
}

func TestReportsAndCommands(t *testing.T) {
	nn1, nn2 := startFakeNN(t), startFakeNN(t)
	d := startDN(t, testConfig(t, nn1.addr, nn2.addr))
	target := startDN(t, testConfig(t))
	c := dataClient(t, d.Addr())
	for _, nn := range []*fakeNN{nn1, nn2} {
		eventually(t, "registration", func() bool { return nn.check(func() bool { return nn.registered[d.ID()] == 1 }) })
	}
	data := randBytes(700)
	writeOK(t, c, 5, data)
	writeOK(t, c, 6, data[:10])
	for _, nn := range []*fakeNN{nn1, nn2} {
		eventually(t, "incremental reports", func() bool {
			return nn.check(func() bool { return nn.received[d.ID()][5] && nn.received[d.ID()][6] })
		})
	}
	// Replicate 5 to target, delete 6.
	nn1.mu.Lock()
	nn1.cmds = []*api.DatanodeCommand{
		{Command: &api.DatanodeCommand_Replicate{Replicate: &api.ReplicateBlockCommand{
			Block: &api.Block{Id: 5, GenStamp: 1, Length: 700}, InodeId: testInode, Token: copyToken(5, 1, target.ID()),
			Targets: []*api.DatanodeInfo{{Id: target.ID(), Addr: target.Addr()}}}}},
		{Command: &api.DatanodeCommand_Delete{Delete: &api.DeleteBlocksCommand{Blocks: []*api.Block{{Id: 6, GenStamp: 1}}}}},
	}
	nn1.mu.Unlock()
	eventually(t, "replication", func() bool { _, ok := target.Store().Stat(5); return ok })
	if got, err := read(dataClient(t, target.Addr()), 5, 1, 0, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("replicated copy: %v", err)
	}
	for _, nn := range []*fakeNN{nn1, nn2} {
		eventually(t, "deleted report", func() bool { return nn.check(func() bool { return nn.deleted[d.ID()][6] }) })
	}
	if _, ok := d.Store().Stat(6); ok {
		t.Fatal("block 6 not deleted")
	}

	// Reregister: register again and send a full report.
	nn2.mu.Lock()
	nn2.forget = true
	nn2.mu.Unlock()
	eventually(t, "re-registration", func() bool {
		return nn2.check(func() bool {
			bs := nn2.full[d.ID()]
			return nn2.registered[d.ID()] == 2 && len(bs) == 1 && bs[0].Block.Id == 5 && bs[0].InodeId == 77
		})
	})
}

func TestRestartKeepsIDAndBlocks(t *testing.T) {
	nn := startFakeNN(t)
	cfg := testConfig(t, nn.addr)
	d := startDN(t, cfg)
	id := d.ID()
	if len(id) != 36 {
		t.Fatalf("generated id %q is not a uuid", id)
	}
	data := randBytes(3000)
	writeOK(t, dataClient(t, d.Addr()), 42, data)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	nn.mu.Lock()
	nn.full = map[string][]*api.ReportedBlock{}
	nn.mu.Unlock()

	d2 := startDN(t, cfg)
	if d2.ID() != id {
		t.Fatalf("id changed: %s -> %s", id, d2.ID())
	}
	eventually(t, "full report after restart", func() bool {
		return nn.check(func() bool {
			bs := nn.full[id]
			return len(bs) == 1 && bs[0].Block.Id == 42 && bs[0].Block.Length == 3000
		})
	})
	if got, err := read(dataClient(t, d2.Addr()), 42, 1, 0, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after restart: %v", err)
	}
	// A configured id that does not match the data dir is refused.
	d2.Close()
	cfg.ID = "someone-else"
	if _, err := Start(context.Background(), cfg, nil); err == nil {
		t.Fatal("started with a mismatched id")
	}
}

func TestFailedDataDir(t *testing.T) {
	nn := startFakeNN(t)
	fs := lbm.NewMemFS()
	cfg := testConfig(t, nn.addr)
	cfg.DataDirs = []string{"/d1", "/d2"}
	cfg.Store.FS = fs
	d := startDN(t, cfg)
	c := dataClient(t, d.Addr())
	blocks := map[uint64][]byte{}
	for id := uint64(1); id <= 4; id++ {
		blocks[id] = randBytes(500)
		writeOK(t, c, id, blocks[id])
	}
	fs.Inject(lbm.Fault{Op: lbm.OpWrite, PathPrefix: "/d1/", Err: syscall.EIO})
	fs.Inject(lbm.Fault{Op: lbm.OpCreate, PathPrefix: "/d1/", Err: syscall.EIO})
	// A streamed write that meets the failing dir fails (its bytes went
	// out as they came, so there is nothing to redo elsewhere; the client
	// re-places the block); the dir is then marked failed and the retry
	// lands on the other dir.
	for id := uint64(5); id <= 12; id++ {
		blocks[id] = randBytes(500)
		if _, _, err := write(t, c, msgs(hdr(id, 1, 500), blocks[id])...); err != nil {
			if status.Code(err) != codes.Internal {
				t.Fatalf("write block %d on a failing dir: %v, want Internal", id, err)
			}
			writeOK(t, c, id, blocks[id])
		}
	}
	if got := d.Store().FailedDirs(); len(got) != 1 || got[0] != "/d1" {
		t.Fatalf("failed dirs %v", got)
	}
	for id, want := range blocks {
		got, err := read(c, id, 1, 0, 0)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("block %d: %v", id, err)
		}
	}
	eventually(t, "failed volume in heartbeat", func() bool {
		return nn.check(func() bool { return nn.failedVols[d.ID()] == 1 })
	})
	capacity, _, failed := d.usage()
	if failed != 1 || capacity != 1<<29 {
		t.Fatalf("usage: capacity %d failed %d", capacity, failed)
	}
}

func TestCorruptReplicaReported(t *testing.T) {
	nn := startFakeNN(t)
	cfg := testConfig(t, nn.addr)
	d := startDN(t, cfg)
	c := dataClient(t, d.Addr())
	data := randBytes(800)
	writeOK(t, c, 9, data)
	info, _ := d.Store().Stat(9)
	corruptOnDisk(t, info.Container+".data", data)
	_, err := read(c, 9, 1, 10, 20)
	if status.Code(err) != codes.DataLoss {
		t.Fatalf("read of corrupt replica: %v, want DataLoss", err)
	}
	eventually(t, "bad block report", func() bool {
		return nn.check(func() bool { return len(nn.bad) == 1 && nn.bad[0] == 9 })
	})
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"no dirs", func(c *Config) { c.DataDirs = nil }},
		{"no heartbeat", func(c *Config) { c.HeartbeatInterval = 0 }},
		{"huge chunk", func(c *Config) { c.ChunkSize = 8 << 20 }},
		{"empty namenode", func(c *Config) { c.Namenodes = []string{""} }},
		{"bad store", func(c *Config) { c.Store.ReplayWorkers = 0 }},
		{"block larger than a container", func(c *Config) { c.MaxBlockSize = uint64(c.Store.MaxContainerSize) + 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t)
			tt.mod(&c)
			if err := c.Validate(); err == nil {
				t.Fatal("Validate accepted it")
			}
		})
	}
	c := testConfig(t)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

var errNotFound = errors.New("block bytes not found in data file")

// TestReplicationWriteChecks: a replication write is taken only from a
// datanode, with a copy token that names this datanode among its targets.
func TestReplicationWriteChecks(t *testing.T) {
	d := startDN(t, testConfig(t))
	as := func(role security.Role, name string) api.DataServiceClient {
		conn, err := grpc.NewClient(d.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(security.SimpleCredentials(security.Identity{Role: role, Name: name})))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return api.NewDataServiceClient(conn)
	}
	data := randBytes(100)
	repl := func(id uint64, tok []byte) []*api.WriteBlockRequest {
		return []*api.WriteBlockRequest{{Msg: &api.WriteBlockRequest_Header{Header: &api.WriteBlockHeader{
			Block: &api.Block{Id: id, GenStamp: 1, Length: uint64(len(data))}, InodeId: testInode, Token: tok, Replication: true}}}, pkt(0, 0, data, true)}
	}
	cases := []struct {
		name   string
		client api.DataServiceClient
		token  []byte
		code   codes.Code
	}{
		{"datanode with a copy token for this datanode", as(security.RoleDatanode, "dn-src"), copyToken(1, 1, "x", d.ID()), codes.OK},
		{"datanode with a copy token for another datanode", as(security.RoleDatanode, "dn-src"), copyToken(2, 1, "dn-other"), codes.PermissionDenied},
		{"user with a valid copy token", as(security.RoleUser, "alice"), copyToken(3, 1, d.ID()), codes.PermissionDenied},
		{"datanode with a write token", as(security.RoleDatanode, "dn-src"), blockToken(4, 1, security.Write), codes.PermissionDenied},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := uint64(i + 1)
			_, _, err := write(t, c.client, repl(id, c.token)...)
			if status.Code(err) != c.code {
				t.Fatalf("got %v, want %v", err, c.code)
			}
			if _, stored := d.Store().Stat(id); stored != (c.code == codes.OK) {
				t.Fatalf("stored = %v", stored)
			}
		})
	}
}
