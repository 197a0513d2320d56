package client

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// Reader reads a file. ReadAt is safe for concurrent use; Read and Seek
// are not.
type Reader struct {
	c    *Client
	ctx  context.Context
	path string
	// off and n are the range opened (OpenRange); refreshed locations are
	// fetched for it again.
	off, n uint64
	mu     sync.Mutex // guards locs, version, served and refetched
	locs   *api.GetBlockLocationsResponse
	// version counts refetch's swaps (0 or 1): a refresh of the same
	// version's replicas (readAt) swaps locs but not the version.
	version int
	pos     int64
	seq     sequential // Read's streams
	// fromCache: locs came from the client's location cache (locCache).
	// Until the Reader has served a byte or told its size or locations
	// (served), a failed read asks the namenode once (refetched) and
	// carries on with its answer; after that it never changes version.
	fromCache, served, refetched bool
}

// Open fetches p's block locations and returns a Reader. ctx bounds every
// call the Reader makes.
func (c *Client) Open(ctx context.Context, p string) (*Reader, error) {
	return c.OpenRange(ctx, p, 0, 0)
}

// OpenRange opens file p to read [off, off+n) only (n 0: to the end): the
// Reader holds the locations and tokens of the blocks that range meets,
// and reads outside it come back short (io.EOF). A WebHDFS datanode reads
// an OPEN this way, since its redirect token admits that range alone.
func (c *Client) OpenRange(ctx context.Context, p string, off, n uint64) (*Reader, error) {
	whole := off == 0 && n == 0
	if whole {
		if locs := c.locs.get(p); locs != nil {
			return &Reader{c: c, ctx: ctx, path: p, locs: locs, fromCache: true}, nil
		}
	}
	gen := c.locs.generation(p)
	locs, err := c.GetBlockLocations(ctx, p, off, n)
	if err != nil {
		return nil, err
	}
	if whole {
		c.locs.put(p, locs, gen)
	}
	return &Reader{c: c, ctx: ctx, path: p, locs: locs, off: off, n: n}, nil
}

// Size returns the file's length when it was opened.
func (r *Reader) Size() int64 { return int64(r.Locations().FileLength) }

// Locations returns the block locations the Reader uses.
func (r *Reader) Locations() *api.GetBlockLocationsResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served = true // the caller may act on this version's length
	return r.locs
}

// current returns the locations without committing the Reader to them.
func (r *Reader) current() *api.GetBlockLocationsResponse {
	locs, _ := r.currentV()
	return locs
}

// currentV is current with its version.
func (r *Reader) currentV() (*api.GetBlockLocationsResponse, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.locs, r.version
}

func (r *Reader) size() int64 { return int64(r.current().FileLength) }

// commit is called before bytes read at version used are returned: it
// reports whether that is still the Reader's version (else the caller
// reads again with the current one: at most once, refetch swapping once),
// and if so commits the Reader to it.
func (r *Reader) commit(used int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.version != used {
		return false
	}
	r.served = true
	return true
}

// refetch replaces cached locations that failed (version used, locs) by
// the namenode's, once, if the Reader has served nothing yet; it reports
// whether the caller should read again. The cache entry goes either way.
func (r *Reader) refetch(used int, locs *api.GetBlockLocationsResponse) bool {
	r.mu.Lock()
	ok := r.fromCache && !r.served && !r.refetched && r.version == used
	if ok {
		r.refetched = true
	}
	r.mu.Unlock()
	if !ok || r.ctx.Err() != nil {
		return false
	}
	r.c.locs.drop(r.path, locs)
	fresh, err := r.c.GetBlockLocations(r.ctx, r.path, 0, 0)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.served || r.version != used {
		return false
	}
	r.locs, r.version = fresh, used+1
	return true
}

// maxLocationRefreshes bounds how often ReadAt refetches a file's block
// locations when no replica of a block could be read (like HDFS's
// DFSInputStream): replicas of a just-written block may not have been
// reported to the namenode yet, and failed replicas get re-replicated.
const maxLocationRefreshes = 6

// Read reads from the current position. Sequential reads stream: the
// current block's replica is read by one ReadBlock stream, and the next
// block's stream is opened while this one is consumed (read-ahead bounded
// by gRPC flow control). A stream that fails hands over to ReadAt, which
// tries the other replicas and reports a corrupt one.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.fromCache {
		return r.readCached(p)
	}
	if r.pos >= r.size() {
		return 0, io.EOF
	}
	n, err := r.seq.read(r, p)
	if err != nil {
		r.seq.drop()
		n, err = r.ReadAt(p[:min(int64(len(p)), r.blockEnd(r.pos)-r.pos)], r.pos)
		if err == io.EOF && n > 0 {
			err = nil
		}
	}
	r.pos += int64(n)
	return n, err
}

// readCached is Read for a Reader opened from the cache: the bytes a
// stream gives are returned only if the Reader is still at the locations
// the stream was opened with (commit); a stream failing before anything
// was served asks the namenode (refetch) and reads its version instead.
func (r *Reader) readCached(p []byte) (int, error) {
	for {
		locs, v := r.currentV()
		if r.pos >= int64(locs.FileLength) {
			if !r.commit(v) {
				continue
			}
			return 0, io.EOF
		}
		n, err := r.seq.read(r, p)
		if err == nil {
			if !r.commit(r.seq.cur.version) {
				r.seq.drop()
				continue
			}
			r.pos += int64(n)
			return n, nil
		}
		r.seq.drop()
		if r.refetch(v, locs) {
			continue
		}
		// Served already (or the namenode failed): the replicas of this
		// version, as an uncached Reader would.
		n, err = r.ReadAt(p[:min(int64(len(p)), r.blockEnd(r.pos)-r.pos)], r.pos)
		if err == io.EOF && n > 0 {
			err = nil
		}
		r.pos += int64(n)
		return n, err
	}
}

// Close ends the Reader's open streams.
func (r *Reader) Close() error {
	r.seq.drop()
	return nil
}

// Seek sets the position for Read.
func (r *Reader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += r.pos
	case io.SeekEnd:
		off += r.size()
	}
	if off < 0 {
		return r.pos, errs.New(errs.Invalid, "client.Reader.Seek", r.path, "negative position")
	}
	r.pos = off
	return off, nil
}

// ReadAt reads len(p) bytes at off, from one replica per block, failing
// over to the next replica when one is down or corrupt (and reporting a
// corrupt one to the namenode).
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errs.New(errs.Invalid, "client.Reader.ReadAt", r.path, "negative offset")
	}
	if !r.fromCache {
		return r.readAt(p, off, r.current())
	}
	for {
		locs, v := r.currentV()
		n, err := r.readAt(p, off, locs)
		if err != nil && err != io.EOF && n == 0 && r.refetch(v, locs) {
			continue
		}
		if !r.commit(v) {
			continue // the namenode's version came meanwhile: read that
		}
		return n, err
	}
}

// readAt is ReadAt at locations locs. A Reader still on cached
// locations does not wait for fresh ones here: ReadAt asks the namenode
// at once (refetch).
func (r *Reader) readAt(p []byte, off int64, locs *api.GetBlockLocationsResponse) (int, error) {
	size := int64(locs.FileLength)
	if off >= size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), size-off)
	n := 0
	cached := r.fromCache && !r.refetchedNow()
	refreshes := 0
	backoff := r.c.cfg.MinBackoff
	for bi := 0; bi < len(locs.Blocks); bi++ {
		lb := locs.Blocks[bi]
		from, take, ok := span(lb.Offset, lb.Block.Length, off+int64(n), off+want)
		if !ok {
			continue
		}
		got, err := r.c.readBlock(r.ctx, locs, lb, uint64(from), p[n:n+int(take)])
		if err != nil && !cached && errs.Is(err, errs.Unavailable) && refreshes < maxLocationRefreshes && r.ctx.Err() == nil {
			refreshes++
			select {
			case <-r.ctx.Done():
				return n, err
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, r.c.cfg.MaxBackoff)
			if fresh, ferr := r.c.GetBlockLocations(r.ctx, r.path, r.off, r.n); ferr == nil && fresh.FileLength == locs.FileLength {
				r.mu.Lock()
				r.locs = fresh
				r.mu.Unlock()
				locs = fresh
			}
			bi = -1 // rescan: blocks before off+n are skipped
			continue
		}
		n += got
		if err != nil {
			return n, err
		}
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (r *Reader) refetchedNow() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refetched || r.served
}

// span is the part of the block [bStart, bStart+bLen) that the read of
// [pos, end) needs: from its start in the block, take bytes; ok false when
// they do not meet. Offsets a namenode could send that do not fit an int64
// never meet a read.
func span(bStart, bLen uint64, pos, end int64) (from, take int64, ok bool) {
	const maxOff = uint64(1<<63 - 1)
	if bStart > maxOff || bLen > maxOff-bStart || pos < 0 || end <= pos {
		return 0, 0, false
	}
	s, e := int64(bStart), int64(bStart+bLen)
	if e <= pos || s >= end {
		return 0, 0, false
	}
	from = pos - s
	if from < 0 { // a gap before this block: the read cannot start here
		return 0, 0, false
	}
	return from, min(e, end) - pos, true
}

// readBlock fills dst from one replica of lb starting at from.
func (c *Client) readBlock(ctx context.Context, locs *api.GetBlockLocationsResponse, lb *api.LocatedBlock, from uint64, dst []byte) (int, error) {
	token := lb.Token
	if len(token) == 0 {
		token = locs.Token
	}
	var lastErr error = errs.Newf(errs.Unavailable, "client.Reader.ReadAt", "", "block %d has no live replica", lb.Block.Id)
	for _, d := range lb.Locations {
		n, err := c.readReplica(ctx, d, lb.Block, locs.InodeId, token, from, dst)
		if err == nil {
			return n, nil
		}
		lastErr = err
		if errs.Is(err, errs.Corrupt) {
			c.reportBad(ctx, lb.Block, d.Id)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return 0, lastErr
}

func (c *Client) reportBad(ctx context.Context, b *api.Block, datanode string) {
	_ = c.call(ctx, "ReportBadBlocks", func(ctx context.Context, nn api.ClientServiceClient) error {
		_, err := nn.ReportBadBlocks(ctx, &api.ReportBadBlocksRequest{Blocks: []*api.Block{b}, DatanodeId: datanode}, trailerOpt(ctx))
		return err
	})
}

// WriteFile creates p with data in one call. A non-empty file's first
// block comes with the Create (CreateOptions.FirstBlock).
func (c *Client) WriteFile(ctx context.Context, p string, data []byte, o CreateOptions) error {
	o.FirstBlock = o.FirstBlock || len(data) > 0
	w, err := c.Create(ctx, p, o)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// ReadFile reads the whole of p.
func (c *Client) ReadFile(ctx context.Context, p string) ([]byte, error) {
	r, err := c.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if r.fromCache {
		// Not Size: that would pin the cached version, which may yet
		// fail over to the namenode's (another length).
		var b bytes.Buffer
		b.Grow(int(r.size()) + 1)
		_, err := b.ReadFrom(r)
		return b.Bytes(), err
	}
	buf := make([]byte, r.Size())
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
