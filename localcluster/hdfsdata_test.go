package localcluster_test

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hadoopcommon "github.com/blockfs/blockfs/api/hadoop/common"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/internal/testutil/hdfsdata"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/security"
)

const hdfsBlock = 256 << 10

func startHDFSCluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 3, Datanodes: 4, Dir: t.TempDir(), MTLS: true, HDFSData: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// hdfsTarget describes a blockfs datanode as the namenode's HDFS door does
// in a LocatedBlockProto: its id as the uuid, its gRPC host and port as
// hostName and ipcPort, its door's port as xferPort.
func hdfsTarget(t *testing.T, d *api.DatanodeInfo) *hdfs.DatanodeInfoProto {
	t.Helper()
	host, grpcPort, err := net.SplitHostPort(d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ip, xfer, err := net.SplitHostPort(d.HdfsDataAddr)
	if err != nil {
		t.Fatalf("datanode %s registered no HDFS data address: %v", d.Id, err)
	}
	port := func(s string) *uint32 { n, _ := strconv.Atoi(s); return proto.Uint32(uint32(n)) }
	return &hdfs.DatanodeInfoProto{Id: &hdfs.DatanodeIDProto{IpAddr: proto.String(ip), HostName: proto.String(host), DatanodeUuid: proto.String(d.Id),
		XferPort: port(xfer), InfoPort: proto.Uint32(0), IpcPort: port(grpcPort)}}
}

// TestHDFSDataDoor: a file of several blocks written through the HDFS data
// door of the first datanode of each pipeline, with replication 3, reads
// back byte for byte through the gRPC client and through the door of each
// replica, and BLOCK_CHECKSUM is the MD5 of its CRC32Cs, as HDFS computes
// it from the bytes.
func TestHDFSDataDoor(t *testing.T) {
	c := startHDFSCluster(t)
	pool := "BP-" + security.DefaultTrustDomain
	leader := c.NamenodeAddrs()[c.Leader()]
	nn := api.NewClientServiceClient(dialAs(t, c, leader, security.RoleUser, "root"))
	data := randBytes(3*hdfsBlock + 1000)
	cr, err := nn.Create(ctxT(t), &api.CreateRequest{Path: "/hdfs", Replication: 3, BlockSize: hdfsBlock})
	if err != nil {
		t.Fatal(err)
	}
	ino := cr.Status.InodeId
	var blocks []*api.Block
	var prev *api.Block
	for off := 0; off < len(data); off += hdfsBlock {
		part := data[off:min(off+hdfsBlock, len(data))]
		ab, err := nn.AddBlock(ctxT(t), &api.AddBlockRequest{Path: "/hdfs", InodeId: ino, Previous: prev})
		if err != nil {
			t.Fatal(err)
		}
		locs := ab.Block.Locations
		if len(locs) != 3 {
			t.Fatalf("pipeline %v", locs)
		}
		var targets []*hdfs.DatanodeInfoProto
		for _, l := range locs[1:] {
			targets = append(targets, hdfsTarget(t, l))
		}
		b := ab.Block.Block
		err = hdfsdata.WriteTo(locs[0].HdfsDataAddr, hdfsdata.Write{Block: hdfsdata.Block(pool, b.Id, b.GenStamp, 0), Token: hdfsdata.Token(ab.Token),
			Targets: targets, Stage: hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE, Data: part, FirstSeqno: 0})
		if err != nil {
			t.Fatalf("write block %d through the door: %v", b.Id, err)
		}
		crc := crc32.Checksum(part, crc32.MakeTable(crc32.Castagnoli))
		prev = &api.Block{Id: b.Id, GenStamp: b.GenStamp, Length: uint64(len(part)), Crc32C: &crc}
		blocks = append(blocks, prev)
	}
	if _, err := nn.Complete(ctxT(t), &api.CompleteRequest{Path: "/hdfs", InodeId: ino, Blocks: blocks}); err != nil {
		t.Fatal(err)
	}
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	readBack(t, cl, "/hdfs", data)

	locs := waitReplicas(t, cl, "/hdfs", 3)
	tok := hdfsdata.Token(locs.Token)
	var fromBytes, fromDoor [][]byte
	for i, lb := range locs.Blocks {
		b := lb.Block
		want := data[lb.Offset : lb.Offset+b.Length]
		eb := hdfsdata.Block(pool, b.Id, b.GenStamp, b.Length)
		for _, l := range lb.Locations {
			got, err := hdfsdata.Read(l.HdfsDataAddr, eb, tok, 0, b.Length)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("block %d from %s through the door: %v", i, l.Id, err)
			}
		}
		if off, n := b.Length/3, b.Length/2; true {
			if got, err := hdfsdata.Read(lb.Locations[0].HdfsDataAddr, eb, tok, off, n); err != nil || !bytes.Equal(got, want[off:off+n]) {
				t.Fatalf("block %d, bytes %d+%d: %v", i, off, n, err)
			}
		}
		sum, err := hdfsdata.Checksum(lb.Locations[1].HdfsDataAddr, eb, tok)
		if err != nil {
			t.Fatal(err)
		}
		if want := hdfsdata.MD5CRC(want, 512); !bytes.Equal(sum.GetBlockChecksum(), want) || sum.GetBytesPerCrc() != 512 ||
			sum.GetCrcPerBlock() != (b.Length+511)/512 || sum.GetCrcType() != hdfs.ChecksumTypeProto_CHECKSUM_CRC32C {
			t.Fatalf("block %d checksum %v, want MD5 %x of %d CRC32Cs of 512 bytes", i, sum, want, (b.Length+511)/512)
		}
		fromBytes = append(fromBytes, hdfsdata.MD5CRC(want, 512))
		fromDoor = append(fromDoor, sum.GetBlockChecksum())
	}
	// The file's MD5-of-MD5-of-CRC32C, as an HDFS client combines them.
	if a, b := hdfsdata.FileMD5(fromDoor), hdfsdata.FileMD5(fromBytes); !bytes.Equal(a, b) {
		t.Fatalf("file checksum %x, want %x", a, b)
	}
}

// TestHDFSDataDoorRefusals: through the real paths, a token that does not
// cover the request is ERROR_ACCESS_TOKEN, a damaged packet is refused
// before it is stored or forwarded, an unreachable target is named in
// firstBadLink; nothing of a refused write is stored, and the door serves
// the next client.
func TestHDFSDataDoorRefusals(t *testing.T) {
	c := startHDFSCluster(t)
	pool := "BP-" + security.DefaultTrustDomain
	leader := c.NamenodeAddrs()[c.Leader()]
	nn := api.NewClientServiceClient(dialAs(t, c, leader, security.RoleUser, "root"))
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	data := randBytes(5000)
	writeFile(t, cl, "/r", data)
	locs := waitReplicas(t, cl, "/r", 3)
	lb := locs.Blocks[0]
	door := lb.Locations[0].HdfsDataAddr
	eb := hdfsdata.Block(pool, lb.Block.Id, lb.Block.GenStamp, lb.Block.Length)

	// newBlock allocates the first block of a new file: the door of its
	// pipeline's first datanode, the block, its write token and the
	// targets after the first.
	allocate := func(path string) (string, *api.Block, []byte, []*hdfs.DatanodeInfoProto) {
		cr, err := nn.Create(ctxT(t), &api.CreateRequest{Path: path, Replication: 3, BlockSize: hdfsBlock})
		if err != nil {
			t.Fatal(err)
		}
		ab, err := nn.AddBlock(ctxT(t), &api.AddBlockRequest{Path: path, InodeId: cr.Status.InodeId})
		if err != nil {
			t.Fatal(err)
		}
		var targets []*hdfs.DatanodeInfoProto
		for _, l := range ab.Block.Locations[1:] {
			targets = append(targets, hdfsTarget(t, l))
		}
		return ab.Block.Locations[0].HdfsDataAddr, ab.Block.Block, ab.Token, targets
	}
	wdoor, nb, wtok, targets := allocate("/w")
	ab := &api.AddBlockResponse{Token: wtok}
	refused := []uint64{nb.Id}
	newBlock := hdfsdata.Block(pool, nb.Id, nb.GenStamp, 0)
	forged := append(append([]byte(nil), ab.Token[:bytes.LastIndexByte(ab.Token, '.')+1]...), "c2lnbmF0dXJl"...)
	for _, tc := range []struct {
		name  string
		read  bool
		block *hdfs.ExtendedBlockProto
		tok   *hadoopcommon.TokenProto
		msg   string
	}{
		{"read without a token", true, eb, nil, "missing token"},
		{"read with another file's write token", true, eb, hdfsdata.Token(ab.Token), "wrong"},
		{"read with a forged token", true, eb, hdfsdata.Token(forged), "bad signature"},
		{"write with a read token", false, newBlock, hdfsdata.Token(locs.Token), "wrong"},
		{"write under another generation", false, hdfsdata.Block(pool, nb.Id, nb.GenStamp+1, 0), hdfsdata.Token(ab.Token), "generation stamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.read {
				_, err = hdfsdata.Read(door, tc.block, tc.tok, 0, 100)
			} else {
				err = hdfsdata.WriteTo(wdoor, hdfsdata.Write{Block: tc.block, Token: tc.tok, Targets: targets, Stage: hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE, Data: data})
			}
			var se *hdfsdata.StatusError
			if !errors.As(err, &se) || se.Status != hdfs.Status_ERROR_ACCESS_TOKEN || !strings.Contains(se.Message, tc.msg) {
				t.Fatalf("got %v, want ERROR_ACCESS_TOKEN mentioning %q", err, tc.msg)
			}
		})
	}

	t.Run("damaged packet", func(t *testing.T) {
		wdoor, nb, wtok, targets := allocate("/damaged")
		refused = append(refused, nb.Id)
		conn, err := hdfsdata.Dial(wdoor)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		w := hdfsdata.Write{Block: hdfsdata.Block(pool, nb.Id, nb.GenStamp, 0), Token: hdfsdata.Token(wtok), Targets: targets, Stage: hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE}
		if err := conn.Setup(&w); err != nil {
			t.Fatal(err)
		}
		sums := hdfsdata.Sums(data[:2048], 512)
		sums[2] ^= 1
		conn.Write(hdfsdata.Packet(hdfsdata.Header(0, 0, 2048, false), sums, data[:2048]))
		if err := conn.Ack(0, 3); !ackStatus(err, hdfs.Status_ERROR_CHECKSUM) {
			t.Fatalf("ack %v, want ERROR_CHECKSUM from the first datanode", err)
		}
	})

	t.Run("unreachable target", func(t *testing.T) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := lis.Addr().String()
		lis.Close()
		gone := hdfsTarget(t, &api.DatanodeInfo{Id: "gone", Addr: dead, HdfsDataAddr: "127.0.0.9:9866"})
		err = hdfsdata.WriteTo(wdoor, hdfsdata.Write{Block: newBlock, Token: hdfsdata.Token(ab.Token), Targets: []*hdfs.DatanodeInfoProto{gone},
			Stage: hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE, Data: data})
		var se *hdfsdata.StatusError
		if !errors.As(err, &se) || se.Status != hdfs.Status_ERROR || se.FirstBadLink != "127.0.0.9:9866" {
			t.Fatalf("got %v, want ERROR naming 127.0.0.9:9866 as the first bad link", err)
		}
	})

	for _, d := range c.Datanodes() {
		for _, id := range refused {
			if info, ok := d.Store().Stat(id); ok {
				t.Fatalf("datanode %s stored the refused block %d: %+v", d.ID(), id, info)
			}
		}
	}
	if got, err := hdfsdata.Read(door, eb, hdfsdata.Token(locs.Token), 0, lb.Block.Length); err != nil || !bytes.Equal(got, data[:lb.Block.Length]) {
		t.Fatalf("the next client: %v", err)
	}
}

// ackStatus reports whether err is an ack whose failed reply is st.
func ackStatus(err error, st hdfs.Status) bool {
	var ae *hdfsdata.AckError
	if !errors.As(err, &ae) {
		return false
	}
	for _, r := range ae.Reply {
		if r == st {
			return true
		}
	}
	return false
}
