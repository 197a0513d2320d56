package datatransfer_test

import (
	"context"
	"sync"

	"github.com/blockfs/blockfs/datatransfer"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// fakeNode stands in for the datanode's read and write paths: replicas in
// memory, a token "ok" for every block, "stale" refused as expired, and
// targets that fail on demand ("down" at setup, "sick" at the first ack).
type fakeNode struct {
	mu       sync.Mutex
	replicas map[uint64]replica
	writes   []datatransfer.WriteRequest
}

type replica struct {
	gen  uint64
	bpc  int
	data []byte
}

func newFakeNode() *fakeNode { return &fakeNode{replicas: map[uint64]replica{}} }

func (f *fakeNode) put(id, gen uint64, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replicas[id] = replica{gen: gen, bpc: 512, data: data}
}

func (f *fakeNode) get(id uint64) (replica, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.replicas[id]
	return r, ok
}

func checkToken(op string, token []byte) error {
	switch string(token) {
	case "ok":
		return nil
	case "":
		return errs.New(errs.Unauthenticated, op, "", "missing token")
	case "stale":
		return errs.New(errs.Unauthenticated, op, "", "token expired")
	}
	return errs.New(errs.Permission, op, "", "wrong block")
}

func (f *fakeNode) ReadBlock(ctx context.Context, r datatransfer.ReadRequest, send func(datatransfer.Chunks) error) error {
	const op = "ReadBlock"
	if err := checkToken(op, r.Token); err != nil {
		return err
	}
	rep, ok := f.get(r.Block.ID)
	if !ok || rep.gen != r.Block.GenStamp {
		return errs.New(errs.NotFound, op, "", "no replica")
	}
	n := r.Length
	if n == 0 {
		n = uint64(len(rep.data)) - min(r.Offset, uint64(len(rep.data)))
	}
	if r.Offset+n > uint64(len(rep.data)) {
		return errs.Newf(errs.Invalid, op, "", "read past the end: offset %d + length %d beyond block length %d", r.Offset, n, len(rep.data))
	}
	// Runs of 8 chunks, as the real path sends runs of its chunk size.
	bpc := int64(rep.bpc)
	for pos, end := int64(r.Offset)/bpc*bpc, int64(r.Offset+n); pos < end; pos += 8 * bpc {
		data := rep.data[pos:min(pos+8*bpc, int64(len(rep.data)))]
		if err := send(datatransfer.Chunks{Offset: pos, BytesPerChecksum: rep.bpc, Data: data, CRCs: chunks.Sums(nil, data, rep.bpc)}); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeNode) WriteBlock(ctx context.Context, w datatransfer.WriteRequest) (datatransfer.BlockStream, error) {
	const op = "WriteBlock"
	if err := checkToken(op, w.Token); err != nil {
		return nil, err
	}
	for _, t := range w.Targets {
		if t.ID == "down" {
			return nil, &datatransfer.PipelineError{Node: t.ID, Offset: -1, Err: errs.New(errs.Unavailable, op, "", "connection refused")}
		}
	}
	f.mu.Lock()
	f.writes = append(f.writes, w)
	f.mu.Unlock()
	s := &fakeStream{f: f, w: w, acks: make(chan bool, 1<<12), done: make(chan struct{})}
	if w.ResumeOffset > 0 {
		rep, _ := f.get(w.Block.ID)
		s.data = append(s.data, rep.data[:w.ResumeOffset]...)
	}
	return s, nil
}

type fakeStream struct {
	f    *fakeNode
	w    datatransfer.WriteRequest
	data []byte
	acks chan bool // last, per packet stored

	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func (s *fakeStream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.once.Do(func() { close(s.done) })
}

func (s *fakeStream) Send(p datatransfer.Packet) error {
	const op = "WriteBlock"
	if int(p.Offset) != len(s.data) {
		s.fail(errs.Newf(errs.Invalid, op, "", "packet at %d, expected %d", p.Offset, len(s.data)))
		return s.err
	}
	if i := chunks.Verify(p.Data, p.CRCs, s.w.BytesPerChecksum); i >= 0 || len(p.CRCs) != chunks.Count(len(p.Data), s.w.BytesPerChecksum) {
		s.fail(&datatransfer.PipelineError{Node: "self", Offset: p.Offset, Err: errs.New(errs.Corrupt, op, "", "checksum mismatch")})
		return s.err
	}
	s.data = append(s.data, p.Data...)
	for _, t := range s.w.Targets {
		if t.ID == "sick" {
			s.fail(&datatransfer.PipelineError{Node: "sick", Offset: -1, Err: errs.New(errs.Unavailable, op, "", "downstream went away")})
			return s.err
		}
	}
	if p.Last {
		s.f.mu.Lock()
		s.f.replicas[s.w.Block.ID] = replica{gen: s.w.Block.GenStamp, bpc: s.w.BytesPerChecksum, data: s.data}
		s.f.mu.Unlock()
	}
	s.acks <- p.Last
	return nil
}

func (s *fakeStream) Ack() (bool, error) {
	select {
	case last := <-s.acks:
		return last, nil
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return false, s.err
	}
}

func (s *fakeStream) Close() { s.fail(errs.New(errs.Canceled, "WriteBlock", "", "closed")) }
