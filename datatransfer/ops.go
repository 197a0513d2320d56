package datatransfer

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	hadoopcommon "github.com/blockfs/blockfs/api/hadoop/common"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
)

// opSpec is one operation of the door: its Hadoop name (the Op of its
// errors and its metrics label) and its handler, which reads the op's
// message and answers it.
type opSpec struct {
	name  string
	serve func(*conn) outcome
}

// ops is every operation the door serves, by op code.
var ops = map[byte]opSpec{
	OpWriteBlock:    {"WRITE_BLOCK", (*conn).writeBlock},
	OpReadBlock:     {"READ_BLOCK", (*conn).readBlock},
	OpBlockChecksum: {"BLOCK_CHECKSUM", (*conn).blockChecksum},
}

// opName is the name of op code, "OTHER" for one not served.
func opName(code byte) string {
	if s, ok := ops[code]; ok {
		return s.name
	}
	return "OTHER"
}

// BlockTokenKind is the kind of the TokenProto an HDFS client presents.
const BlockTokenKind = "HDFS_BLOCK_TOKEN"

// errUnsupported marks a request the door understands but does not serve
// (ERROR_UNSUPPORTED).
var errUnsupported = errors.New("not supported")

func unsupported(op, format string, a ...any) error {
	return &errs.Error{Kind: errs.Invalid, Op: op, Msg: fmt.Sprintf(format, a...), Err: errUnsupported}
}

// statusOf is the Hadoop status an error answers: a token refused is
// ERROR_ACCESS_TOKEN (an HDFS client then fetches a new one), a checksum
// mismatch ERROR_CHECKSUM.
func statusOf(err error) hdfs.Status {
	if errors.Is(err, errUnsupported) {
		return hdfs.Status_ERROR_UNSUPPORTED
	}
	switch errs.KindOf(err) {
	case errs.Unauthenticated, errs.Permission:
		return hdfs.Status_ERROR_ACCESS_TOKEN
	case errs.Corrupt:
		return hdfs.Status_ERROR_CHECKSUM
	case errs.Exist:
		return hdfs.Status_ERROR_EXISTS
	case errs.Invalid:
		return hdfs.Status_ERROR_INVALID
	}
	return hdfs.Status_ERROR
}

// respondError answers an op with err's status and message, naming the op.
func (c *conn) respondError(op string, err error) outcome {
	st := statusOf(err)
	return c.respond(&hdfs.BlockOpResponseProto{Status: st.Enum(), Message: proto.String(errs.WithOp(err, op).Error())}, false)
}

// respond sends an op's answer; the outcome is its status.
func (c *conn) respond(resp *hdfs.BlockOpResponseProto, clean bool) outcome {
	if err := c.write(appendDelimited(nil, resp)); err != nil {
		return outcome{status: "closed"}
	}
	return outcome{status: resp.GetStatus().String(), clean: clean}
}

// readOp reads an op's message, bounded by MaxOpBytes.
func (c *conn) readOp(m proto.Message) error {
	return readDelimited(c.r, c.s.cfg.MaxOpBytes, m)
}

// baseHeader checks a request's block (its pool is this cluster's) and
// token (a block token), and returns them as the paths take them.
func (c *conn) baseHeader(op string, h *hdfs.BaseHeaderProto) (Block, []byte, error) {
	eb := h.GetBlock()
	if pool := eb.GetPoolId(); c.s.cfg.PoolID != "" && pool != c.s.cfg.PoolID {
		return Block{}, nil, errs.Newf(errs.NotFound, op, "", "block pool %q is not this cluster's %q", pool, c.s.cfg.PoolID)
	}
	b := Block{ID: eb.GetBlockId(), GenStamp: eb.GetGenerationStamp(), NumBytes: eb.GetNumBytes()}
	tok := h.GetToken()
	if tok == nil {
		return b, nil, nil // the path refuses a missing token, as for gRPC
	}
	if k := tok.GetKind(); k != BlockTokenKind {
		return b, nil, errs.Newf(errs.Unauthenticated, op, blockName(b.ID), "token of kind %q, want %q", k, BlockTokenKind)
	}
	return b, tok.GetIdentifier(), nil
}

func blockName(id uint64) string { return fmt.Sprintf("block %d", id) }

// Token wraps blockfs's signed block token as the TokenProto an HDFS
// client carries (what the namenode's HDFS door puts in LocatedBlockProto).
func Token(signed []byte) *hadoopcommon.TokenProto {
	return &hadoopcommon.TokenProto{Identifier: signed, Password: []byte{}, Kind: proto.String(BlockTokenKind), Service: proto.String("")}
}

// metrics are the door's, registered on the datanode's registry.
type metrics struct {
	ops     *prometheus.CounterVec // op, status
	bytes   *prometheus.CounterVec // op
	open    prometheus.Gauge
	refused prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "hdfs_ops_total",
			Help: "HDFS data transfer ops served, by op (READ_BLOCK, WRITE_BLOCK, BLOCK_CHECKSUM, OTHER) and the status answered (SUCCESS, ERROR_*; closed: the connection ended without one).",
		}, []string{"op", "status"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "hdfs_bytes_total",
			Help: "Block bytes moved through the HDFS data transfer door, by op: READ_BLOCK sent, WRITE_BLOCK received.",
		}, []string{"op"}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "hdfs_connections",
			Help: "Open HDFS data transfer connections.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "hdfs_connections_refused_total",
			Help: "HDFS data transfer connections closed at once because MaxConns were open.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.ops, m.bytes, m.open, m.refused)
	}
	return m
}
