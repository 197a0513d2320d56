package raftnet

import (
	"bufio"
	"crypto/x509"
	"errors"
	"io"
	"net"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/errs"
)

// The RPC type bytes of hashicorp/raft's NetworkTransport (net_transport.go,
// v1.7): every request on an accepted connection is one of these bytes
// followed by the msgpack encoding of the request struct; an
// InstallSnapshot request is followed by Size raw bytes of snapshot.
const (
	rpcAppendEntries uint8 = iota
	rpcRequestVote
	rpcInstallSnapshot
	rpcTimeoutNow
	rpcRequestPreVote
)

// RPC names, the rpc label of an RPC refusal.
var rpcNames = map[uint8]string{
	rpcAppendEntries:   "AppendEntries",
	rpcRequestVote:     "RequestVote",
	rpcInstallSnapshot: "InstallSnapshot",
	rpcTimeoutNow:      "TimeoutNow",
	rpcRequestPreVote:  "RequestPreVote",
}

// guard checks every Raft request on one accepted, authenticated
// connection before Raft reads a byte of it.
//
// Why here, on the accepted net.Conn, and not on the transport's consumer
// channel: an raft.RPC on Consumer() does not say which connection (so
// which certificate) it came from, and heartbeats never reach the channel
// at all (NetworkTransport hands them to Raft's heartbeat fast path), yet a
// heartbeat with a higher term is enough to depose a leader. The connection
// is the one place where the certificate and the request meet.
//
// How: when Raft's reader asks for bytes and none of the current request
// are left, the guard reads the next request in full from the TLS stream —
// the type byte, then the request decoded with the same msgpack codec,
// handle and struct type Raft decodes it with, while recording the raw
// bytes the decoder consumed. Decoding the whole struct (not scanning for
// the first RPCHeader) matters: msgpack maps may repeat or reorder keys,
// and only the same decoder is sure to see the header Raft will see. The
// codec with a zero ReaderBufferSize reads exactly the bytes of one value,
// so the recording is exactly the request. If the header passes, the
// recorded bytes are handed to Raft unchanged (Raft decodes them again),
// then for InstallSnapshot the Size bytes after it are passed through
// without interpretation. If it fails, the connection is closed and Raft
// sees an end of stream: no byte of a refused request ever reaches it.
//
// The cost is a second decode of every request and one request's bytes held
// twice in memory (the recording and Raft's own decoded copy), one request
// at a time per connection.
type guard struct {
	c    *serverConn
	name string            // the namenode the peer's certificate names
	leaf *x509.Certificate // the peer's certificate
	br   *bufio.Reader
	rec  recorder
	dec  *codec.Decoder

	pending []byte // the checked request, not yet all read by Raft
	off     int
	through int64 // snapshot bytes still to pass through
	changed bool  // the request may change this node's configuration
}

// recorder reads from br and keeps every byte read. It is a plain
// io.Reader, so the codec reads exactly what it needs through it.
type recorder struct {
	br  *bufio.Reader
	buf []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.br.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

func newGuard(c *serverConn, name string) *guard {
	g := &guard{c: c, name: name, br: bufio.NewReaderSize(c.Conn, 64<<10)}
	g.rec.br = g.br
	g.dec = codec.NewDecoder(&g.rec, &codec.MsgpackHandle{})
	return g
}

// read gives Raft the next bytes of checked requests.
func (g *guard) read(p []byte) (int, error) {
	for {
		switch {
		case g.off < len(g.pending):
			n := copy(p, g.pending[g.off:])
			g.off += n
			return n, nil
		case g.through > 0:
			if int64(len(p)) > g.through {
				p = p[:g.through]
			}
			n, err := g.br.Read(p)
			g.through -= int64(n)
			return n, err
		}
		if err := g.next(); err != nil {
			return 0, err
		}
	}
}

// next reads, decodes and checks the next request.
// appendEntriesHead is the part of raft.AppendEntriesRequest the guard
// reads: the header, the old leader field and each entry's type. Its
// fields have raft's names and types, so the same codec fills them with
// the values raft's own decode will see (a repeated key is the last one
// for both); the entries' data is skipped, not copied, which keeps the
// guard's second decode of every AppendEntries cheap.
type appendEntriesHead struct {
	raft.RPCHeader
	Leader  []byte
	Entries []struct{ Type raft.LogType }
}

func (g *guard) next() error {
	const op = "raftnet.StreamLayer.Accept"
	g.rec.buf, g.pending, g.off = g.rec.buf[:0], nil, 0
	t, err := g.br.ReadByte()
	if err != nil {
		return err
	}
	g.rec.buf = append(g.rec.buf, t)
	var hdr raft.RPCHeader
	var legacy []byte // the pre-RPCHeader address field (Leader, Candidate)
	switch t {
	case rpcAppendEntries:
		var req appendEntriesHead
		if err = g.dec.Decode(&req); err == nil {
			hdr, legacy = req.RPCHeader, req.Leader
			for _, e := range req.Entries {
				g.changed = g.changed || e.Type == raft.LogConfiguration
			}
		}
	case rpcRequestVote:
		var req raft.RequestVoteRequest
		if err = g.dec.Decode(&req); err == nil {
			hdr, legacy = req.RPCHeader, req.Candidate
		}
	case rpcRequestPreVote:
		var req raft.RequestPreVoteRequest
		if err = g.dec.Decode(&req); err == nil {
			hdr = req.RPCHeader
		}
	case rpcInstallSnapshot:
		var req raft.InstallSnapshotRequest
		if err = g.dec.Decode(&req); err == nil {
			hdr, legacy = req.RPCHeader, req.Leader
			if req.Size < 0 {
				err = errs.Newf(errs.Invalid, op, g.name, "snapshot size %d", req.Size)
			}
			g.through, g.changed = req.Size, true
		}
	case rpcTimeoutNow:
		var req raft.TimeoutNowRequest
		if err = g.dec.Decode(&req); err == nil {
			hdr = req.RPCHeader
		}
	default:
		err = errs.Newf(errs.Invalid, op, g.name, "unknown Raft RPC type %d", t)
	}
	rpc := rpcNames[t]
	if rpc == "" {
		rpc = "unknown"
	}
	if err != nil {
		return g.refuse(rpc, &refusal{ReasonMalformed, errs.Wrap(errs.Invalid, op, g.name, err)})
	}
	if err := g.c.s.checkHeader(g.name, g.leaf, hdr, legacy); err != nil {
		return g.refuse(rpc, err)
	}
	g.pending = g.rec.buf
	return nil
}

// refuse reports the refused request, closes the connection and gives
// Raft an end of stream.
func (g *guard) refuse(rpc string, err error) error {
	g.through, g.pending = 0, nil
	if f := g.c.s.opts.RPCRefused; f != nil {
		f(rpc, Reason(err), g.name, g.c.RemoteAddr(), err)
	}
	g.c.Close()
	return io.EOF
}

// written is told that Raft is about to answer the current request; a
// request that may have changed the configuration (a configuration entry,
// a snapshot) makes the layer's Changed hook run first, so that by the
// time the sender learns the entry is stored here, this node already
// refuses a server the entry removed.
func (g *guard) written() {
	if g.changed {
		g.changed = false
		if f := g.c.s.opts.Changed; f != nil {
			f()
		}
	}
}

// checkHeader: the RPC's sender id must be the certificate's name, the
// certificate must not be revoked, the name must (still) be admitted, and
// a sender address, when the layer knows the address of that id, must be
// it.
func (s *StreamLayer) checkHeader(name string, leaf *x509.Certificate, hdr raft.RPCHeader, legacy []byte) error {
	const op = "raftnet.StreamLayer.Accept"
	if string(hdr.ID) != name {
		return &refusal{ReasonHeaderID, errs.Newf(errs.Permission, op, name,
			"the Raft RPC header names server %q, the certificate namenode %q", hdr.ID, name)}
	}
	if err := s.revoked(leaf, name); err != nil {
		return err
	}
	if err := s.admit(name); err != nil {
		return err
	}
	if s.opts.PeerAddr == nil {
		return nil
	}
	want, ok := s.opts.PeerAddr(name)
	if !ok {
		return nil
	}
	for _, a := range [][]byte{hdr.Addr, legacy} {
		if len(a) > 0 && raft.ServerAddress(a) != want {
			return &refusal{ReasonHeaderAddr, errs.Newf(errs.Permission, op, name,
				"the Raft RPC header gives address %q, the configuration has %q for %s", a, want, name)}
		}
	}
	return nil
}

// admit asks Options.Admit whether name may speak Raft to this node.
func (s *StreamLayer) admit(name string) error {
	if s.opts.Admit == nil {
		return nil
	}
	err := s.opts.Admit(name)
	if err == nil {
		return nil
	}
	var r *refusal
	if errors.As(err, &r) {
		return err
	}
	return &refusal{ReasonNotMember, err}
}

// Refuse makes err a refusal with reason, for an Options.Admit hook to say
// why (ReasonNotMember, ReasonRevoked).
func Refuse(reason string, err error) error { return &refusal{reason, err} }

var _ net.Conn = (*serverConn)(nil)
