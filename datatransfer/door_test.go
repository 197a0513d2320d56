package datatransfer_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	hadoopcommon "github.com/blockfs/blockfs/api/hadoop/common"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/datatransfer"
	"github.com/blockfs/blockfs/internal/testutil/hdfsdata"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

const pool = "BP-blockfs"

type door struct {
	addr string
	node *fakeNode
	reg  *prometheus.Registry
}

func startDoor(t *testing.T, mod func(*datatransfer.Config)) *door {
	t.Helper()
	d := &door{node: newFakeNode(), reg: prometheus.NewRegistry()}
	cfg := datatransfer.Config{Reader: d.node, Writer: d.node, DatanodeID: "self", PoolID: pool,
		MaxPacketBytes: 1 << 20, IdleTimeout: 10 * time.Second, Registerer: d.reg}
	if mod != nil {
		mod(&cfg)
	}
	s, err := datatransfer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	d.addr = lis.Addr().String()
	return d
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.N(256))
	}
	return b
}

var okToken = hdfsdata.Token([]byte("ok"))

func block(id, gen, n uint64) *hdfs.ExtendedBlockProto { return hdfsdata.Block(pool, id, gen, n) }

// TestReadRanges: READ_BLOCK of any range gives its bytes, chunk-aligned
// from the chunk holding the offset, every CRC the stored one; two reads
// share a connection.
func TestReadRanges(t *testing.T) {
	start := time.Now()
	d := startDoor(t, nil)
	data := randBytes(200<<10 + 77)
	d.node.put(1, 5, data)
	for _, tc := range []struct{ off, n uint64 }{
		{0, uint64(len(data))}, {0, 1}, {511, 2}, {512, 512}, {1000, 100 << 10}, {uint64(len(data)) - 1, 1}, {65 << 10, 135<<10 + 77},
	} {
		got, err := hdfsdata.Read(d.addr, block(1, 5, uint64(len(data))), okToken, tc.off, tc.n)
		if err != nil {
			t.Fatalf("read %d+%d: %v", tc.off, tc.n, err)
		}
		if !bytes.Equal(got, data[tc.off:tc.off+tc.n]) {
			t.Fatalf("read %d+%d: bytes differ", tc.off, tc.n)
		}
	}
	c, err := hdfsdata.Dial(d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		if got, err := c.Read(block(1, 5, 0), okToken, 10, 5000); err != nil || !bytes.Equal(got, data[10:5010]) {
			t.Fatalf("read on a kept connection: %v", err)
		}
	}
	// The last read is counted once the door has the client's status.
	for n := 0.0; n != 9; n = counter(t, d.reg, "blockfs_datanode_hdfs_ops_total", map[string]string{"op": "READ_BLOCK", "status": "SUCCESS"}) {
		if n > 9 || time.Since(start) > 20*time.Second {
			t.Fatalf("READ_BLOCK SUCCESS counted %v times, want 9", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBlockChecksum: the whole replica's MD5 of its CRCs, or that of a
// prefix when the request names fewer bytes, as HDFS computes them.
func TestBlockChecksum(t *testing.T) {
	d := startDoor(t, nil)
	data := randBytes(10*512 + 100)
	d.node.put(2, 1, data)
	for _, n := range []int{len(data), len(data) + 10, 0, 512, 700, 10 * 512} {
		resp, err := hdfsdata.Checksum(d.addr, block(2, 1, uint64(n)), okToken)
		if err != nil {
			t.Fatal(err)
		}
		want := hdfsdata.MD5CRC(data[:min(n, len(data))], 512)
		if !bytes.Equal(resp.GetBlockChecksum(), want) || resp.GetBytesPerCrc() != 512 || resp.GetCrcPerBlock() != 11 ||
			resp.GetCrcType() != hdfs.ChecksumTypeProto_CHECKSUM_CRC32C {
			t.Fatalf("checksum of %d bytes: %v, want md5 %x, 512 per CRC, 11 CRCs", n, resp, want)
		}
	}
}

// TestWrite: packets go to the write path in order with the client's
// CRCs; acks name every member; heartbeats are answered on the way; the
// stage and generation stamps map as HDFS clients use them.
func TestWrite(t *testing.T) {
	d := startDoor(t, nil)
	data := randBytes(300<<10 + 3)
	targets := []*hdfs.DatanodeInfoProto{dnInfo("dn2", "127.0.0.2", 9866, 9200), dnInfo("dn3", "127.0.0.3", 9866, 9200)}
	if err := hdfsdata.WriteTo(d.addr, hdfsdata.Write{Block: block(3, 7, 0), Token: okToken, Targets: targets,
		Stage: hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE, Data: data, FirstSeqno: 1}); err != nil {
		t.Fatal(err)
	}
	rep, ok := d.node.get(3)
	if !ok || rep.gen != 7 || !bytes.Equal(rep.data, data) {
		t.Fatalf("stored %v (gen %d, %d bytes)", ok, rep.gen, len(rep.data))
	}
	w := d.node.writes[0]
	if len(w.Targets) != 2 || w.Targets[0] != (datatransfer.Target{ID: "dn2", Addr: "dn2.example:9200"}) || w.ResumeOffset != 0 || w.PreviousGenStamp != 0 {
		t.Fatalf("write request %+v", w)
	}

	// An append resumes at the replica's length under the latest stamp,
	// with a heartbeat in the middle.
	more := randBytes(1000)
	c, err := hdfsdata.Dial(d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	app := hdfsdata.Write{Block: block(3, 7, uint64(len(data))), Token: okToken, Stage: hdfs.OpWriteBlockProto_PIPELINE_SETUP_APPEND,
		MinBytes: uint64(len(data)), LatestGen: 8}
	if err := c.Setup(&app); err != nil {
		t.Fatal(err)
	}
	off := int64(len(data))
	send(t, c, hdfsdata.Header(0, -1, 0, false), nil, nil)
	var hb hdfs.PipelineAckProto
	if err := c.ReadMsg(&hb); err != nil || hb.GetSeqno() != -1 || len(hb.Reply) != 1 || hb.Reply[0] != hdfs.Status_SUCCESS {
		t.Fatalf("heartbeat answered with %v, %v; want the ack of packet -1", &hb, err)
	}
	send(t, c, hdfsdata.Header(off, 0, 509, false), hdfsdata.Sums(more[:509], 512), more[:509]) // to the chunk boundary
	send(t, c, hdfsdata.Header(off+509, 1, len(more)-509, false), hdfsdata.Sums(more[509:], 512), more[509:])
	send(t, c, hdfsdata.Header(off+int64(len(more)), 2, 0, true), nil, nil)
	for seq := range int64(3) {
		if err := c.Ack(seq, 1); err != nil {
			t.Fatal(err)
		}
	}
	rep, _ = d.node.get(3)
	if rep.gen != 8 || !bytes.Equal(rep.data, append(append([]byte(nil), data...), more...)) {
		t.Fatalf("after the append: gen %d, %d bytes", rep.gen, len(rep.data))
	}
	if w := d.node.writes[1]; w.ResumeOffset != uint64(len(data)) || w.PreviousGenStamp != 7 || w.Block.GenStamp != 8 {
		t.Fatalf("append request %+v", w)
	}
}

func send(t *testing.T, c *hdfsdata.Conn, h *hdfs.PacketHeaderProto, crcs []uint32, data []byte) {
	t.Helper()
	if _, err := c.Write(hdfsdata.Packet(h, crcs, data)); err != nil {
		t.Fatal(err)
	}
}

func dnInfo(uuid, ip string, xfer, ipc uint32) *hdfs.DatanodeInfoProto {
	return &hdfs.DatanodeInfoProto{Id: &hdfs.DatanodeIDProto{IpAddr: proto.String(ip), HostName: proto.String(uuid + ".example"),
		DatanodeUuid: proto.String(uuid), XferPort: proto.Uint32(xfer), InfoPort: proto.Uint32(0), IpcPort: proto.Uint32(ipc)}}
}

// counter is the value of counter name with the given label values.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			match := 0
			for _, lp := range m.Label {
				if v, ok := labels[lp.GetName()]; ok && v == lp.GetValue() {
					match++
				}
			}
			if match == len(labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// exchange sends raw request bytes on a fresh connection and returns the
// datanode's answer, or nil if it closed the connection without one.
func exchange(t *testing.T, addr string, req []byte) *hdfs.BlockOpResponseProto {
	t.Helper()
	c, err := hdfsdata.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	c.Conn.(*net.TCPConn).CloseWrite()
	r, err := c.Response()
	if err != nil {
		return nil
	}
	// The connection ends after a refusal.
	if _, err := c.R.ReadByte(); err != io.EOF && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("after %v the connection gave %v, want its end", r.GetStatus(), err)
	}
	return r
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "reset") }

func readOp(b *hdfs.ExtendedBlockProto, tok *hadoopcommon.TokenProto, off, n uint64) *hdfs.OpReadBlockProto {
	return &hdfs.OpReadBlockProto{Header: &hdfs.ClientOperationHeaderProto{BaseHeader: &hdfs.BaseHeaderProto{Block: b, Token: tok}, ClientName: proto.String("t")},
		Offset: proto.Uint64(off), Len: proto.Uint64(n)}
}

// TestBadRequests: each bad request gets the right status and message and
// the end of its connection, or just the end; the door serves the next.
func TestBadRequests(t *testing.T) {
	d := startDoor(t, nil)
	data := randBytes(4096)
	d.node.put(1, 5, data)
	foreign := hdfsdata.Token([]byte("ok"))
	foreign.Kind = proto.String("WEBHDFS delegation")
	oversized := append([]byte{0, 28, hdfsdata.ReadBlock}, binary.AppendUvarint(nil, 1<<20)...)
	good := hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(block(1, 5, 4096), okToken, 0, 10))
	for _, tc := range []struct {
		name   string
		req    []byte
		status hdfs.Status // SUCCESS: no answer, only the end of the connection
		msg    string
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), hdfs.Status_ERROR_INVALID, "data transfer version 18245, want 28"},
		{"old version", hdfsdata.Op(27, hdfsdata.ReadBlock, readOp(block(1, 5, 4096), okToken, 0, 10)), hdfs.Status_ERROR_INVALID, "version 27"},
		{"unknown op", hdfsdata.Op(28, 0x56, readOp(block(1, 5, 4096), okToken, 0, 10)), hdfs.Status_ERROR_UNSUPPORTED, "op 0x56 is not served"},
		{"oversized op", oversized, hdfs.Status_ERROR_INVALID, "OpReadBlockProto of 1048576 bytes exceeds the limit of 65536"},
		{"truncated op", good[:len(good)-4], hdfs.Status_ERROR_INVALID, "READ_BLOCK: truncated OpReadBlockProto: unexpected EOF"},
		{"header only", good[:3], hdfs.Status_ERROR_INVALID, "truncated OpReadBlockProto"},
		{"malformed op", append([]byte{0, 28, hdfsdata.ReadBlock, 3}, 0xff, 0xff, 0xff), hdfs.Status_ERROR_INVALID, "malformed OpReadBlockProto"},
		{"missing required field", hdfsdata.Op(28, hdfsdata.ReadBlock, &hdfs.OpReadBlockProto{Offset: proto.Uint64(0)}), hdfs.Status_ERROR_INVALID, "required field"},
		{"foreign pool", hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(hdfsdata.Block("BP-other", 1, 5, 4096), okToken, 0, 10)), hdfs.Status_ERROR, `block pool "BP-other"`},
		{"no token", hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(block(1, 5, 4096), nil, 0, 10)), hdfs.Status_ERROR_ACCESS_TOKEN, "missing token"},
		{"stale token", hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(block(1, 5, 4096), hdfsdata.Token([]byte("stale")), 0, 10)), hdfs.Status_ERROR_ACCESS_TOKEN, "READ_BLOCK: token expired"},
		{"another block's token", hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(block(1, 5, 4096), hdfsdata.Token([]byte("block 9")), 0, 10)), hdfs.Status_ERROR_ACCESS_TOKEN, "wrong block"},
		{"token of another kind", hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(block(1, 5, 4096), foreign, 0, 10)), hdfs.Status_ERROR_ACCESS_TOKEN, `kind "WEBHDFS delegation"`},
		{"stale generation", hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(block(1, 4, 4096), okToken, 0, 10)), hdfs.Status_ERROR, "no replica"},
		{"past the end", hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(block(1, 5, 4096), okToken, 4000, 100)), hdfs.Status_ERROR_INVALID, "read past the end"},
		{"zero bytes", hdfsdata.Op(28, hdfsdata.ReadBlock, readOp(block(1, 5, 4096), okToken, 0, 0)), hdfs.Status_ERROR_INVALID, "a read of 0 bytes"},
		{"composite checksum", hdfsdata.Op(28, hdfsdata.BlockChecksum, &hdfs.OpBlockChecksumProto{Header: &hdfs.BaseHeaderProto{Block: block(1, 5, 4096), Token: okToken},
			BlockChecksumOptions: &hdfs.BlockChecksumOptionsProto{BlockChecksumType: hdfs.BlockChecksumTypeProto_COMPOSITE_CRC.Enum()}}), hdfs.Status_ERROR_UNSUPPORTED, "only MD5CRC"},
		{"checksum with a stale token", hdfsdata.Op(28, hdfsdata.BlockChecksum, &hdfs.OpBlockChecksumProto{Header: &hdfs.BaseHeaderProto{Block: block(1, 5, 4096), Token: hdfsdata.Token([]byte("stale"))}}), hdfs.Status_ERROR_ACCESS_TOKEN, "BLOCK_CHECKSUM: token expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := exchange(t, d.addr, tc.req)
			if r == nil {
				t.Fatalf("no answer, want %v", tc.status)
			}
			if r.GetStatus() != tc.status || !strings.Contains(r.GetMessage(), tc.msg) {
				t.Fatalf("answer %v %q, want %v mentioning %q", r.GetStatus(), r.GetMessage(), tc.status, tc.msg)
			}
			if got, err := hdfsdata.Read(d.addr, block(1, 5, 4096), okToken, 0, 4096); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the next client: %v", err)
			}
		})
	}
}

// acksUntilEnd reads acks until the connection ends.
func acksUntilEnd(c *hdfsdata.Conn) []*hdfs.PipelineAckProto {
	var out []*hdfs.PipelineAckProto
	for {
		a := &hdfs.PipelineAckProto{}
		if err := c.ReadMsg(a); err != nil {
			return out
		}
		out = append(out, a)
	}
}

// TestBadWrites: a write the door or the write path refuses at setup is
// answered with its status (and firstBadLink for a target); one refused
// on a packet is answered with an ack naming the member to blame, and
// ends; no replica is stored, and the door serves the next client.
func TestBadWrites(t *testing.T) {
	d := startDoor(t, func(c *datatransfer.Config) { c.MaxPacketBytes = 64 << 10 })
	data := randBytes(4096)
	d.node.put(1, 5, data)
	sums := hdfsdata.Sums(data, 512)
	badSums := append([]uint32(nil), sums...)
	badSums[3] ^= 1
	create := hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE
	two := []*hdfs.DatanodeInfoProto{dnInfo("dn2", "127.0.0.2", 9866, 9200), dnInfo("sick", "127.0.0.3", 9867, 9200)}
	huge := append(binary.BigEndian.AppendUint32(nil, 4+(1<<20)), 0, 20)
	for i, tc := range []struct {
		name    string
		w       hdfsdata.Write
		status  hdfs.Status // the setup's answer
		msg     string
		badLink string
		packets [][]byte
		acks    [][]hdfs.Status // the acks' replies, by seqno order
		seqs    []int64
	}{
		{name: "stale token", w: hdfsdata.Write{Token: hdfsdata.Token([]byte("stale")), Stage: create}, status: hdfs.Status_ERROR_ACCESS_TOKEN, msg: "WRITE_BLOCK: token expired"},
		{name: "unsupported stage", w: hdfsdata.Write{Token: okToken, Stage: hdfs.OpWriteBlockProto_TRANSFER_RBW}, status: hdfs.Status_ERROR_UNSUPPORTED, msg: "stage TRANSFER_RBW"},
		{name: "target without an ipc port", w: hdfsdata.Write{Token: okToken, Stage: create, Targets: []*hdfs.DatanodeInfoProto{dnInfo("dn2", "127.0.0.2", 9866, 0)}},
			status: hdfs.Status_ERROR_INVALID, msg: "target 0 (127.0.0.2:9866) names no datanode uuid, host and ipc port"},
		{name: "target down", w: hdfsdata.Write{Token: okToken, Stage: create, Targets: []*hdfs.DatanodeInfoProto{dnInfo("dn2", "127.0.0.2", 9866, 9200), dnInfo("down", "127.0.0.4", 9868, 9200)}},
			status: hdfs.Status_ERROR, msg: "connection refused", badLink: "127.0.0.4:9868"},
		{name: "bad checksum", w: hdfsdata.Write{Token: okToken, Stage: create},
			packets: [][]byte{hdfsdata.Packet(hdfsdata.Header(0, 0, len(data), false), badSums, data)},
			acks:    [][]hdfs.Status{{hdfs.Status_ERROR_CHECKSUM}}, seqs: []int64{0}},
		{name: "out of order", w: hdfsdata.Write{Token: okToken, Stage: create},
			packets: [][]byte{hdfsdata.Packet(hdfsdata.Header(0, 4, 512, false), sums[:1], data[:512]), hdfsdata.Packet(hdfsdata.Header(512, 6, 512, false), sums[1:2], data[512:1024])},
			acks:    [][]hdfs.Status{{hdfs.Status_SUCCESS}, {hdfs.Status_ERROR}}, seqs: []int64{4, 6}},
		{name: "packet over the bound", w: hdfsdata.Write{Token: okToken, Stage: create},
			packets: [][]byte{huge}, acks: [][]hdfs.Status{{hdfs.Status_ERROR}}, seqs: []int64{-1}},
		{name: "data in a heartbeat", w: hdfsdata.Write{Token: okToken, Stage: create},
			packets: [][]byte{hdfsdata.Packet(hdfsdata.Header(0, -1, 512, false), sums[:1], data[:512])},
			acks:    [][]hdfs.Status{{hdfs.Status_ERROR}}, seqs: []int64{-1}},
		{name: "downstream fails", w: hdfsdata.Write{Token: okToken, Stage: create, Targets: two},
			packets: [][]byte{hdfsdata.Packet(hdfsdata.Header(0, 0, len(data), false), sums, data)},
			acks:    [][]hdfs.Status{{hdfs.Status_SUCCESS, hdfs.Status_SUCCESS, hdfs.Status_ERROR}}, seqs: []int64{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := uint64(100 + i)
			tc.w.Block = block(id, 1, 0)
			c, err := hdfsdata.Dial(d.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			err = c.Setup(&tc.w)
			var se *hdfsdata.StatusError
			switch {
			case tc.status == hdfs.Status_SUCCESS && err != nil:
				t.Fatalf("setup: %v", err)
			case tc.status != hdfs.Status_SUCCESS && (!errors.As(err, &se) || se.Status != tc.status || !strings.Contains(se.Message, tc.msg) || se.FirstBadLink != tc.badLink):
				t.Fatalf("setup: %v; want %v mentioning %q, first bad link %q", err, tc.status, tc.msg, tc.badLink)
			}
			for _, p := range tc.packets {
				c.Write(p) // the door may have closed the connection already
			}
			// The failure's ack comes last; the acks of packets stored
			// before it may or may not have gone out when the door closed
			// the connection.
			acks := acksUntilEnd(c)
			if (len(acks) == 0) != (len(tc.acks) == 0) || len(acks) > len(tc.acks) {
				t.Fatalf("acks %v, want replies %v", acks, tc.acks)
			}
			for j, a := range acks {
				k := j
				if j == len(acks)-1 {
					k = len(tc.acks) - 1
				}
				if a.GetSeqno() != tc.seqs[k] || !slices.Equal(a.Reply, tc.acks[k]) {
					t.Fatalf("ack %d: %v, want seqno %d replies %v", j, a, tc.seqs[k], tc.acks[k])
				}
			}
			if _, ok := d.node.get(id); ok {
				t.Fatal("a replica was stored")
			}
			if got, err := hdfsdata.Read(d.addr, block(1, 5, 4096), okToken, 0, 4096); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the next client: %v", err)
			}
		})
	}
}

// TestMaxConns: a connection past the limit is closed at once; the ones
// served go on.
func TestMaxConns(t *testing.T) {
	d := startDoor(t, func(c *datatransfer.Config) { c.MaxConns = 1 })
	d.node.put(1, 5, randBytes(1000))
	held, err := hdfsdata.Dial(d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if got, err := held.Read(block(1, 5, 1000), okToken, 0, 10); err != nil || len(got) != 10 {
		t.Fatalf("first connection: %v", err)
	}
	if _, err := hdfsdata.Read(d.addr, block(1, 5, 1000), okToken, 0, 10); err == nil {
		t.Fatal("a second connection was served")
	}
	if got, err := held.Read(block(1, 5, 1000), okToken, 10, 10); err != nil || len(got) != 10 {
		t.Fatalf("first connection, again: %v", err)
	}
}
