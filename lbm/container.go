package lbm

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/blockfs/blockfs/errs"
)

// dataDir is one data directory.
type dataDir struct {
	path   string
	failed atomic.Bool
	// fullUntil (unix nanoseconds) is when a directory that ran out of
	// space may be tried again; 0 when it is not full.
	fullUntil atomic.Int64

	mu    sync.Mutex
	avail []*container // not full, no writer; LIFO
	all   map[*container]struct{}
}

// container is one <id>.data + <id>.metadata pair.
type container struct {
	s        *Store
	dir      *dataDir
	id       string
	dataPath string
	metaPath string
	data     File

	// The data file's header is loaded on first use. A failure is not
	// cached: a transient read error must not poison the container for
	// the life of the store (found by TestStoreModel; regression test
	// TestTransientFaultsDoNotPoison).
	dataMu    sync.Mutex
	dataReady atomic.Bool
	dataFC    *fileCipher // set before dataReady

	// mu serialises metadata appends (CREATE/DELETE + fsync), compaction
	// and removal, and guards the fields below. It is per container; block
	// reads never take it.
	mu        sync.Mutex
	meta      File
	metaFC    *fileCipher
	metaOff   int64 // where the next record goes
	nextBlock int64 // next free aligned offset in the data file
	created   int   // CREATE records in the metadata file
	blocks    map[uint64]blockEntry
	liveBytes int64
	sealed    bool // full forever (set by compaction, kept in the header)
	broken    bool // a write failed: no more writes until restart
	removed   bool
	writers   int
	// rbws holds the standing RBW records of the waiting replicas kept
	// in this container (replica waiting to be recovered): while it is
	// not empty the container is neither compacted nor removed.
	rbws map[uint64]createRec
}

func (c *container) name() string { return filepath.Join(c.dir.path, c.id) }

// fullLocked reports whether the container takes no more blocks.
func (c *container) fullLocked() bool {
	cfg := &c.s.cfg
	return c.sealed || c.nextBlock >= cfg.MaxContainerSize ||
		(cfg.MaxBlocksPerContainer > 0 && c.created >= cfg.MaxBlocksPerContainer)
}

func (c *container) metaHeaderLen() int64 {
	if c.metaFC != nil {
		return encHeaderLen + fileHeaderLen
	}
	return fileHeaderLen
}

// dataCipher loads (once it succeeds) the data file's cipher; nil for a
// plain file. The data file is never read during replay: this runs on first
// use. Errors are returned, not remembered, so the next call retries.
func (c *container) dataCipher() (*fileCipher, error) {
	if c.dataReady.Load() {
		return c.dataFC, nil
	}
	c.dataMu.Lock()
	defer c.dataMu.Unlock()
	if c.dataReady.Load() {
		return c.dataFC, nil
	}
	var b [encHeaderLen + fileHeaderLen]byte
	n, err := c.data.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errs.Wrap(errs.IO, "lbm.Store.Read", c.dataPath, err)
	}
	h := b[:n]
	var fc *fileCipher
	if isEncHeader(h) {
		if fc, err = c.s.keys.openHeader(c.dataPath, h); err != nil {
			return nil, err
		}
		fc.xorAt(h[encHeaderLen:], h[encHeaderLen:], encHeaderLen)
		h = h[encHeaderLen:]
	}
	if _, ok := decodeFileHeader(h, dataMagic); !ok {
		return nil, errs.Newf(errs.Corrupt, "lbm.Store.Read", c.dataPath, "bad data file header at offset 0")
	}
	c.dataFC = fc
	c.dataReady.Store(true)
	return fc, nil
}

func newContainerID() string {
	var b [16]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// fileHeader builds the header bytes of a new file (encryption header, if
// any, then the encrypted 16-byte file header).
func (s *Store) fileHeader(magic string, flags uint16, enc bool) ([]byte, *fileCipher, error) {
	if !enc {
		b := make([]byte, fileHeaderLen)
		encodeFileHeader(b, magic, flags)
		return b, nil, nil
	}
	fc, eh, err := s.keys.newFileCipher()
	if err != nil {
		return nil, nil, err
	}
	b := append(eh, make([]byte, fileHeaderLen)...)
	encodeFileHeader(b[encHeaderLen:], magic, flags)
	fc.xorAt(b[encHeaderLen:], b[encHeaderLen:], encHeaderLen)
	return b, fc, nil
}

// createContainer makes a new empty container in d: data file, metadata
// file, both headers fsynced, then the directory fsynced.
func (s *Store) createContainer(d *dataDir) (*container, error) {
	c := &container{s: s, dir: d, id: newContainerID(), blocks: map[uint64]blockEntry{},
		nextBlock: firstBlockOffset}
	c.dataPath = c.name() + ".data"
	c.metaPath = c.name() + ".metadata"
	fail := func(path string, err error) (*container, error) {
		if c.data != nil {
			c.data.Close()
		}
		if c.meta != nil {
			c.meta.Close()
		}
		return nil, errs.Wrap(errs.IO, "lbm.Store.Create", path, err)
	}
	dh, dfc, err := s.fileHeader(dataMagic, 0, s.cfg.Encrypt)
	if err != nil {
		return nil, err
	}
	mh, mfc, err := s.fileHeader(metaMagic, 0, s.cfg.Encrypt)
	if err != nil {
		return nil, err
	}
	if c.data, err = s.fs.OpenFile(c.dataPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		return fail(c.dataPath, err)
	}
	if _, err = c.data.WriteAt(dh, 0); err == nil {
		err = c.data.Sync()
	}
	if err != nil {
		return fail(c.dataPath, err)
	}
	if c.meta, err = s.fs.OpenFile(c.metaPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		return fail(c.metaPath, err)
	}
	if _, err = c.meta.WriteAt(mh, 0); err == nil {
		err = c.meta.Sync()
	}
	if err != nil {
		return fail(c.metaPath, err)
	}
	if err = s.fs.SyncDir(d.path); err != nil {
		return fail(d.path, err)
	}
	c.metaFC, c.metaOff = mfc, int64(len(mh))
	c.dataFC = dfc
	c.dataReady.Store(true)
	d.mu.Lock()
	d.all[c] = struct{}{}
	d.mu.Unlock()
	s.metrics.containers.Inc()
	return c, nil
}

// appendMetaLocked encrypts (if needed) and appends buf, then fsyncs the
// metadata file. c.mu must be held. On failure the container is broken.
func (c *container) appendMetaLocked(buf []byte) error {
	if c.metaFC != nil {
		c.metaFC.xorAt(buf, buf, c.metaOff)
	}
	_, err := c.meta.WriteAt(buf, c.metaOff)
	if err == nil {
		err = c.meta.Sync()
	}
	if err != nil {
		c.broken = true
		return errs.Wrap(errs.IO, "lbm.Store.Put", c.metaPath, err)
	}
	c.metaOff += int64(len(buf))
	return nil
}

// blockItem is one block for writeBlocks: its bytes, chunk CRCs (of bpc
// bytes each) and whole CRC, checked by whoever made it. writeBlocks sets
// entry and stored for the blocks it stores.
type blockItem struct {
	meta  BlockMeta
	data  []byte
	crcs  []uint32
	bpc   int
	crc   uint32
	entry blockEntry
	// stored, err and done belong to the group commit (group.go).
	stored bool
	err    error
	done   bool
}

// writeBlocks appends as many of items as fit into c (at least one), in
// Kudu's order: data (each block followed by its chunk CRC table) written
// and fsynced, then the CREATE2 records appended and fsynced, then the
// blocks published. It returns how many it stored. The caller owns c as
// its single writer.
func (c *container) writeBlocks(items []*blockItem, now int64) (int, error) {
	cfg := &c.s.cfg
	c.mu.Lock()
	off, created := c.nextBlock, c.created
	c.mu.Unlock()
	fc, err := c.dataCipher()
	if err != nil {
		return 0, err
	}
	recs := make([]createRec, 0, len(items))
	var scratch []byte
	for _, it := range items {
		if len(recs) > 0 && (off >= cfg.MaxContainerSize ||
			(cfg.MaxBlocksPerContainer > 0 && created >= cfg.MaxBlocksPerContainer)) {
			break
		}
		d := it.data
		// One write of block ‖ table, encrypted at the block's offset.
		n := len(d) + len(it.crcs)*chunkCRCLen
		scratch = slices.Grow(scratch[:0], n)[:n]
		copy(scratch, d)
		putCRCs(scratch[len(d):], it.crcs)
		if fc != nil {
			fc.xorAt(scratch, scratch, off)
		}
		if n > 0 {
			if _, err := c.data.WriteAt(scratch, off); err != nil {
				c.dataFailed(alignUp(off+int64(n)), err)
				return 0, errs.Wrap(errs.IO, "lbm.BlockWriter.Write", c.dataPath, err)
			}
		}
		recs = append(recs, createRec{ID: it.meta.ID, Inode: it.meta.Inode, GenStamp: it.meta.GenStamp,
			Offset: off, Length: int64(len(d)), CRC: it.crc, TimestampUS: now, BPC: uint32(it.bpc)})
		off = alignUp(off + int64(n))
		created++
	}
	if err := datasync(c.data); err != nil {
		c.dataFailed(off, err)
		return 0, errs.Wrap(errs.IO, "lbm.BlockWriter.Write", c.dataPath, err)
	}
	buf := make([]byte, 0, len(recs)*frameLen(create2BodyLen))
	for i := range recs {
		buf = appendCreate(buf, &recs[i])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken || c.removed {
		return 0, errs.New(errs.IO, "lbm.BlockWriter.Write", c.metaPath, "container is read-only after an earlier failure")
	}
	if err := c.appendMetaLocked(buf); err != nil {
		return 0, err
	}
	c.nextBlock, c.created = off, created
	var bytes int64
	for i := range recs {
		e := recs[i].entry(c)
		c.addLocked(recs[i].ID, e)
		items[i].entry, items[i].stored = e, true
		bytes += e.length
	}
	c.s.metrics.bytesWritten.Add(float64(bytes))
	return len(recs), nil
}

// entry is the index entry of a CREATE/CREATE2 record in container c.
func (r *createRec) entry(c *container) blockEntry {
	return blockEntry{c: c, off: r.Offset, length: r.Length, inode: r.Inode, gen: r.GenStamp,
		ts: r.TimestampUS, crc: r.CRC, bpc: r.BPC}
}

// addLocked publishes a block whose record is durable. c.mu must be held.
// It returns the live version of id it replaced, if any (a Replace
// commit); a version in c itself leaves c's accounting here (its CREATE
// stays in the log, superseded, and counts as dead for compaction), one in
// another container is the caller's to retire.
func (c *container) addLocked(id uint64, e blockEntry) (old blockEntry, replaced bool) {
	old, replaced = c.s.index.publish(id, e)
	if replaced && old.c == c {
		c.liveBytes -= old.length
		c.s.used.Add(-old.extent())
	}
	c.blocks[id] = e
	c.liveBytes += e.length
	c.s.used.Add(e.extent())
	return old, replaced
}

// putCRCs encodes crcs as u32 little-endian into dst.
func putCRCs(dst []byte, crcs []uint32) {
	for i, v := range crcs {
		binary.LittleEndian.PutUint32(dst[i*chunkCRCLen:], v)
	}
}

// dataFailed handles a failed write or sync of the data file, before any
// metadata names the bytes: on ENOSPC the container stays usable (its
// metadata is whole; a full disk is not a broken one, and its deletes
// are what free space), new blocks starting at end or later, so no CTR
// keystream position ever encrypts two plaintexts; any other error breaks
// it.
func (c *container) dataFailed(end int64, err error) {
	if !outOfSpace(err) {
		c.markBroken()
		return
	}
	c.mu.Lock()
	c.nextBlock = max(c.nextBlock, end)
	c.mu.Unlock()
}

func (c *container) markBroken() {
	c.mu.Lock()
	c.broken = true
	c.mu.Unlock()
}

// compactLocked rewrites the metadata with the live CREATE records only:
// temp file, fsync, rename over the original, fsync the directory. The new
// header is sealed so the container stays full. c.mu must be held.
func (c *container) compactLocked() error {
	s := c.s
	tmp := c.metaPath + ".tmp"
	hdr, fc, err := s.fileHeader(metaMagic, flagSealed, c.metaFC != nil || s.cfg.Encrypt)
	if err != nil {
		return err
	}
	ids := make([]uint64, 0, len(c.blocks))
	for id := range c.blocks {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uint64) int { return cmp.Compare(c.blocks[a].off, c.blocks[b].off) })
	buf := make([]byte, 0, len(hdr)+len(ids)*frameLen(create2BodyLen))
	buf = append(buf, hdr...)
	for _, id := range ids {
		e := c.blocks[id]
		buf = appendCreate(buf, &createRec{ID: id, Inode: e.inode, GenStamp: e.gen, Offset: e.off,
			Length: e.length, CRC: e.crc, TimestampUS: e.ts, BPC: e.bpc})
	}
	if fc != nil {
		body := buf[encHeaderLen+fileHeaderLen:]
		fc.xorAt(body, body, encHeaderLen+fileHeaderLen)
	}
	f, err := s.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return errs.Wrap(errs.IO, "lbm.Store.Delete", tmp, err)
	}
	if _, err = f.WriteAt(buf, 0); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = s.fs.Rename(tmp, c.metaPath)
	}
	if err != nil {
		f.Close()
		s.fs.Remove(tmp)
		return errs.Wrap(errs.IO, "lbm.Store.Delete", c.metaPath, err)
	}
	old := c.meta
	c.meta, c.metaFC, c.metaOff = f, fc, int64(len(buf))
	c.created, c.sealed = len(ids), true
	old.Close()
	if err := s.fs.SyncDir(c.dir.path); err != nil {
		c.broken = true
		return errs.Wrap(errs.IO, "lbm.Store.Delete", c.dir.path, err)
	}
	s.log.Info("lbm: compacted container metadata", "container", c.name(), "live", len(ids))
	return nil
}

// shouldCompactLocked: full, and live/created at or below the ratio.
func (c *container) shouldCompactLocked() bool {
	r := c.s.cfg.CompactLiveRatio
	return r > 0 && !c.broken && c.fullLocked() && c.created > 0 && len(c.rbws) == 0 && c.writers == 0 &&
		float64(len(c.blocks)) <= r*float64(c.created)
}

func (c *container) deadLocked() bool {
	return c.fullLocked() && len(c.blocks) == 0 && len(c.rbws) == 0 && c.writers == 0 && !c.removed
}

// removeLocked deletes a dead container: data file first, then (only if
// that worked) the metadata file, then fsyncs the directory.
func (c *container) removeLocked() error {
	s := c.s
	// The DELETEs that made the container dead must be durable before its
	// data goes. At Open they may have been read back from the page cache
	// after their fsync failed; removing the data file on their word and
	// then losing them to a crash left metadata with live blocks and no
	// data file, and Open failed (found by TestStoreModel; regression test
	// TestDeadRemovalAfterFailedDeleteSync).
	if err := c.meta.Sync(); err != nil {
		return errs.Wrap(errs.IO, "lbm.Store.Delete", c.metaPath, err)
	}
	c.removed = true
	c.data.Close()
	c.meta.Close()
	c.dir.mu.Lock()
	delete(c.dir.all, c)
	c.dir.mu.Unlock()
	s.metrics.containers.Dec()
	if err := s.fs.Remove(c.dataPath); err != nil {
		return errs.Wrap(errs.IO, "lbm.Store.Delete", c.dataPath, err)
	}
	if err := s.fs.Remove(c.metaPath); err != nil {
		return errs.Wrap(errs.IO, "lbm.Store.Delete", c.metaPath, err)
	}
	if err := s.fs.SyncDir(c.dir.path); err != nil {
		return errs.Wrap(errs.IO, "lbm.Store.Delete", c.dir.path, err)
	}
	s.log.Info("lbm: removed dead container", "container", c.name())
	return nil
}
