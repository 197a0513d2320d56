package datatransfer

import (
	"context"
	"fmt"
)

// The datanode's paths the door uses: these interfaces, and nothing else
// of the datanode.

// Block is a replica as an HDFS client names it (ExtendedBlockProto
// without its pool, which the door checks).
type Block struct {
	ID, GenStamp, NumBytes uint64
}

// ReadRequest asks the read path for a range of a replica.
type ReadRequest struct {
	Block Block
	// Token is the block token as blockfs signs it (the identifier of the
	// client's TokenProto).
	Token  []byte
	Offset uint64
	Length uint64 // 0: to the end of the replica
}

// Chunks is a run of whole chunks of a replica with their stored CRC32Cs.
type Chunks struct {
	Offset           int64 // block offset of Data[0], a multiple of BytesPerChecksum
	BytesPerChecksum int   // chunk size; only the block's last chunk may be shorter
	Data             []byte
	CRCs             []uint32 // one per chunk of Data
}

// BlockReader is the datanode's read path.
type BlockReader interface {
	// ReadBlock checks r.Token for a read of r.Block exactly as the
	// datanode's gRPC ReadBlock checks its request's, then calls send with
	// runs of whole chunks covering the range, in order, the first
	// starting at the chunk that holds r.Offset. An error before the first
	// send means nothing was read; a range past the end of the replica is
	// an errs.Invalid error. send may keep nothing of its Chunks once it
	// returns; an error from send ends the read with that error.
	ReadBlock(ctx context.Context, r ReadRequest, send func(Chunks) error) error
}

// Target is a downstream member of a write pipeline.
type Target struct {
	ID   string // datanode id
	Addr string // its blockfs (gRPC) address
}

// WriteRequest starts a write of one replica.
type WriteRequest struct {
	Block   Block  // the generation stamp the replica is written under
	Token   []byte // as in ReadRequest
	Targets []Target
	// BytesPerChecksum is the chunk size of the client's CRCs.
	BytesPerChecksum int
	// ResumeOffset and PreviousGenStamp, for an append or a pipeline
	// recovery: the replica here holds at least ResumeOffset bytes under
	// PreviousGenStamp and is reopened at that length. Both zero for a new
	// block.
	ResumeOffset, PreviousGenStamp uint64

	// ieee: the client sends CRC32 (IEEE), converted to CRC32C (crc32.go).
	ieee bool
}

// Packet is one packet of a write, in order.
type Packet struct {
	Offset int64 // block offset of Data[0]
	Data   []byte
	// CRCs are the CRC32Cs of Data's chunks; a packet that starts inside a
	// chunk begins with the short rest of it.
	CRCs []uint32
	Last bool // the block ends with this packet
	Sync bool // make the replica durable on every member before acknowledging
}

// BlockWriter is the datanode's write path and pipeline.
type BlockWriter interface {
	// WriteBlock starts a write of w.Block through the datanode's own
	// write path: the token is checked exactly as the gRPC WriteBlock
	// checks its header's, the local replica is opened (or reopened) and
	// the stream to the first target is opened; the datanode's pipeline
	// forwards to the rest. It returns once the write is set up, or with
	// why it could not be (a *PipelineError when a member is to blame).
	// ctx ends the write.
	WriteBlock(ctx context.Context, w WriteRequest) (BlockStream, error)
}

// BlockStream is a write under way. One goroutine may Send while another
// waits in Ack.
type BlockStream interface {
	// Send passes the next packet; the stream owns its slices from then
	// on. An error means the write is over (Ack says why).
	Send(p Packet) error
	// Ack waits for the acknowledgement of the oldest packet not yet
	// acknowledged: stored on this datanode and every target. last is set
	// on the last packet's, once the replica is committed everywhere. A
	// failure is a *PipelineError when a member is to blame.
	Ack() (last bool, err error)
	// Close ends the stream, abandoning the write unless its last packet
	// was acknowledged, and returns once the write path let go of it.
	Close()
}

// PipelineError is a write failure blamed on one member of the pipeline.
type PipelineError struct {
	Node   string // the datanode id of the member to blame
	Offset int64  // the block offset of the chunk concerned, or -1
	Err    error
}

func (e *PipelineError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("datanode %s (at block offset %d): %v", e.Node, e.Offset, e.Err)
	}
	return fmt.Sprintf("datanode %s: %v", e.Node, e.Err)
}

func (e *PipelineError) Unwrap() error { return e.Err }
