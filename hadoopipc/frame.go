package hadoopipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// header is the connection preamble: magic, version, service class, auth.
const (
	magic       = "hrpc"
	rpcVersion  = 9
	authNone    = 0x00
	authSASL    = 0xDF
	headerBytes = 7
)

// Call ids with a meaning of their own (Hadoop's RpcConstants).
const (
	callConnectionContext = -3
	callPing              = -4
	callSASL              = -33
)

// errFrame reports a frame that cannot be parsed; the connection ends.
var errFrame = errors.New("malformed frame")

// readFrame reads one length-prefixed frame of at most max bytes into buf
// (grown as needed) and returns its body. A frame is read as it arrives,
// so a length that lies costs the memory of the bytes actually sent.
func readFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(l[:]))
	if n > max || n < 0 {
		return nil, fmt.Errorf("%w: frame of %d bytes is over the limit of %d", errFrame, n, max)
	}
	buf = buf[:0]
	for len(buf) < n {
		chunk := min(n-len(buf), 64<<10)
		if cap(buf)-len(buf) < chunk {
			buf = append(buf[:cap(buf)], make([]byte, chunk)...)[:len(buf)]
		}
		k, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+k]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// nextMessage splits the next varint-delimited message off b.
func nextMessage(b []byte) (msg, rest []byte, err error) {
	l, n := protowire.ConsumeVarint(b)
	if n < 0 || l > uint64(len(b)-n) {
		return nil, nil, fmt.Errorf("%w: bad message length", errFrame)
	}
	return b[n : n+int(l)], b[n+int(l):], nil
}

// appendFrame appends a frame of msgs (nil ones skipped) to dst.
func appendFrame(dst []byte, msgs ...proto.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for _, m := range msgs {
		if m == nil {
			continue
		}
		size := proto.Size(m)
		dst = protowire.AppendVarint(dst, uint64(size))
		var err error
		if dst, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(dst, m); err != nil {
			return nil, err
		}
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst, nil
}
