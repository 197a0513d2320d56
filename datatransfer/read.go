package datatransfer

import (
	"crypto/md5"
	"encoding/binary"
	"hash"

	"google.golang.org/protobuf/proto"

	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// readPacketBytes bounds the data of a packet the door sends, as HDFS's
// 64 KiB packets.
const readPacketBytes = 64 << 10

// readBlock serves READ_BLOCK: the answer with the checksum the replica
// is stored with (CRC32C, its chunk size, where the first chunk starts),
// the chunks in packets with their stored CRCs, an empty last packet, and
// then the client's read status, which is logged.
func (c *conn) readBlock() outcome {
	const op = "READ_BLOCK"
	var req hdfs.OpReadBlockProto
	if err := c.readOp(&req); err != nil {
		return c.respondError(op, err)
	}
	b, token, err := c.baseHeader(op, req.GetHeader().GetBaseHeader())
	if err != nil {
		return c.respondError(op, err)
	}
	if req.GetLen() == 0 {
		return c.respondError(op, errs.Newf(errs.Invalid, op, blockName(b.ID), "a read of 0 bytes at offset %d", req.GetOffset()))
	}
	sums := req.GetSendChecksums()
	started := false
	var seqno, end int64
	var sent uint64
	err = c.s.cfg.Reader.ReadBlock(c.ctx, ReadRequest{Block: b, Token: token, Offset: req.GetOffset(), Length: req.GetLen()}, func(ch Chunks) error {
		if !started {
			started = true
			if err := c.write(appendDelimited(nil, readAnswer(ch.Offset, ch.BytesPerChecksum, sums))); err != nil {
				return err
			}
		}
		// Packets of whole chunks, at most readPacketBytes (or one chunk).
		per := max(readPacketBytes/ch.BytesPerChecksum, 1)
		for i := 0; i < len(ch.CRCs); i += per {
			j := min(i+per, len(ch.CRCs))
			data := ch.Data[i*ch.BytesPerChecksum : min(j*ch.BytesPerChecksum, len(ch.Data))]
			off := ch.Offset + int64(i*ch.BytesPerChecksum)
			var crcs []uint32
			if sums {
				crcs = ch.CRCs[i:j]
			}
			if err := c.write(packetPrefix(packetHeader(off, seqno, len(data), false), crcs, len(data)), data); err != nil {
				return err
			}
			seqno++
			end = off + int64(len(data))
			sent += uint64(len(data))
		}
		return nil
	})
	c.s.met.bytes.WithLabelValues(op).Add(float64(sent))
	if err != nil {
		if !started {
			return c.respondError(op, err)
		}
		// Mid-stream, HDFS has no way to say why: the connection ends.
		c.log.Info("HDFS read ended early", "block", b.ID, "sent", sent, "err", err)
		return outcome{status: "closed"}
	}
	if !started { // nothing to send (the paths send at least a chunk)
		return c.respondError(op, errs.Newf(errs.Internal, op, blockName(b.ID), "the read path sent nothing"))
	}
	if err := c.write(packetPrefix(packetHeader(end, seqno, 0, true), nil, 0)); err != nil {
		return outcome{status: "closed"}
	}
	// The client says whether the checksums matched; it may also just go.
	c.readDeadline(c.s.cfg.IdleTimeout)
	var rs hdfs.ClientReadStatusProto
	if err := readDelimited(c.r, c.s.cfg.MaxOpBytes, &rs); err != nil {
		return outcome{status: hdfs.Status_SUCCESS.String()}
	}
	switch rs.GetStatus() {
	case hdfs.Status_CHECKSUM_OK, hdfs.Status_SUCCESS:
		c.log.Debug("HDFS read done", "block", b.ID, "bytes", sent, "client", rs.GetStatus())
	default:
		c.log.Warn("HDFS client reports a bad read", "block", b.ID, "bytes", sent, "client", rs.GetStatus())
	}
	return outcome{status: hdfs.Status_SUCCESS.String(), clean: true}
}

// readAnswer is READ_BLOCK's SUCCESS: CRC32C chunks of bpc bytes (none
// sent without sums) from block offset off.
func readAnswer(off int64, bpc int, sums bool) *hdfs.BlockOpResponseProto {
	typ := hdfs.ChecksumTypeProto_CHECKSUM_CRC32C
	if !sums {
		typ = hdfs.ChecksumTypeProto_CHECKSUM_NULL
	}
	return &hdfs.BlockOpResponseProto{Status: hdfs.Status_SUCCESS.Enum(), ReadOpChecksumInfo: &hdfs.ReadOpChecksumInfoProto{
		Checksum:    &hdfs.ChecksumProto{Type: typ.Enum(), BytesPerChecksum: proto.Uint32(uint32(bpc))},
		ChunkOffset: proto.Uint64(uint64(off)),
	}}
}

// blockChecksum serves BLOCK_CHECKSUM as HDFS computes MD5CRC: the MD5 of
// the replica's chunk CRCs (4 bytes each, big endian), read through the
// read path. A request for fewer bytes than the replica holds (the
// header's numBytes) covers the CRCs of the whole chunks in it and the
// CRC of the part of the next; crcPerBlock counts the replica's chunks.
func (c *conn) blockChecksum() outcome {
	const op = "BLOCK_CHECKSUM"
	var req hdfs.OpBlockChecksumProto
	if err := c.readOp(&req); err != nil {
		return c.respondError(op, err)
	}
	b, token, err := c.baseHeader(op, req.GetHeader())
	if err != nil {
		return c.respondError(op, err)
	}
	if t := req.GetBlockChecksumOptions().GetBlockChecksumType(); t != hdfs.BlockChecksumTypeProto_MD5CRC {
		return c.respondError(op, unsupported(op, "block checksum type %v: only MD5CRC is served", t))
	}
	sum := newMD5CRC(b.NumBytes)
	err = c.s.cfg.Reader.ReadBlock(c.ctx, ReadRequest{Block: b, Token: token}, func(ch Chunks) error {
		sum.add(ch)
		return nil
	})
	if err != nil {
		return c.respondError(op, err)
	}
	bpc := sum.bpc
	if bpc == 0 {
		bpc = chunks.Default // an empty replica
	}
	return c.respond(&hdfs.BlockOpResponseProto{Status: hdfs.Status_SUCCESS.Enum(), ChecksumResponse: &hdfs.OpBlockChecksumResponseProto{
		BytesPerCrc:          proto.Uint32(uint32(bpc)),
		CrcPerBlock:          proto.Uint64(sum.chunks),
		BlockChecksum:        sum.digest(),
		CrcType:              hdfs.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(),
		BlockChecksumOptions: &hdfs.BlockChecksumOptionsProto{BlockChecksumType: hdfs.BlockChecksumTypeProto_MD5CRC.Enum()},
	}}, true)
}

// md5CRC computes a replica's MD5CRC as its chunks go by: of all its CRCs
// (whole), and of those of its first want bytes (part), since which one
// counts is known only at the end.
type md5CRC struct {
	want        uint64
	whole, part hash.Hash
	bpc         int
	chunks      uint64
	end         uint64
}

func newMD5CRC(want uint64) *md5CRC { return &md5CRC{want: want, whole: md5.New(), part: md5.New()} }

func (m *md5CRC) add(ch Chunks) {
	m.bpc = ch.BytesPerChecksum
	var be [4]byte
	for i, crc := range ch.CRCs {
		start := uint64(ch.Offset) + uint64(i*ch.BytesPerChecksum)
		data := ch.Data[i*ch.BytesPerChecksum : min((i+1)*ch.BytesPerChecksum, len(ch.Data))]
		binary.BigEndian.PutUint32(be[:], crc)
		m.whole.Write(be[:])
		switch stop := start + uint64(len(data)); {
		case stop <= m.want:
			m.part.Write(be[:])
		case start < m.want: // the chunk the request ends in
			binary.BigEndian.PutUint32(be[:], chunks.CRC(data[:m.want-start]))
			m.part.Write(be[:])
		}
		m.chunks++
		m.end = start + uint64(len(data))
	}
}

func (m *md5CRC) digest() []byte {
	if m.want < m.end {
		return m.part.Sum(nil)
	}
	return m.whole.Sum(nil)
}
