package lbm

import (
	"errors"
	"math"
	"os"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// loadContainer opens and replays one container and merges it.
func (s *Store) loadContainer(d *dataDir, id string, hasData, hasMeta bool) error {
	base := d.path + "/" + id
	dataPath, metaPath := base+".data", base+".metadata"
	ioErr := func(p string, err error) error { return errs.Wrap(errs.IO, "lbm.Open", p, err) }
	removeIncomplete := func(why string) error {
		s.log.Warn("lbm: removing incomplete container", "container", base, "why", why)
		for _, p := range []string{dataPath, metaPath} {
			if err := s.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return ioErr(p, err)
			}
		}
		if err := s.fs.SyncDir(d.path); err != nil {
			return ioErr(d.path, err)
		}
		return nil
	}
	var dataSize int64
	if hasData {
		fi, err := s.fs.Stat(dataPath)
		if err != nil {
			return ioErr(dataPath, err)
		}
		dataSize = fi.Size()
	}
	if !hasMeta {
		if dataSize <= firstBlockOffset {
			return removeIncomplete("data file without metadata and without blocks")
		}
		return errs.Newf(errs.Corrupt, "lbm.Open", dataPath, "data file of %d bytes has no metadata file", dataSize)
	}
	meta, err := s.fs.OpenFile(metaPath, os.O_RDWR, 0)
	if err != nil {
		return ioErr(metaPath, err)
	}
	fi, err := meta.Stat()
	if err != nil {
		meta.Close()
		return ioErr(metaPath, err)
	}
	size := fi.Size()
	if !hasData {
		// No data file (an interrupted dead-container removal deletes it
		// first): bounds-checking CREATEs against it would call a dead
		// container corrupt. Its live blocks, if any, are checked below
		// (regression test TestCrashDuringDeadContainerRemoval).
		dataSize = math.MaxInt64
	}
	c := &container{s: s, dir: d, id: id, dataPath: dataPath, metaPath: metaPath, meta: meta}
	st := &replayState{path: metaPath, dataSize: dataSize, c: c, next: firstBlockOffset,
		blocks: make(map[uint64]blockEntry, size/int64(frameLen(createBodyLen))/2+1)}
	t0 := time.Now()
	path := "streaming"
	var end int64
	var tail frameStatus
	var hdrOK bool
	if s.cfg.InmemReplayThreshold > 0 && size-fileHeaderLen <= s.cfg.InmemReplayThreshold && s.tryBudget(size) {
		path = "inmem"
		end, tail, hdrOK, err = s.replayInmem(c, st, size)
		s.budget.Add(size)
	} else {
		path = s.cfg.StreamingReplay.String()
		end, tail, hdrOK, err = s.replayStreaming(c, st, size, s.cfg.StreamingReplay)
	}
	if err == nil && !hdrOK {
		meta.Close()
		if !hasData || dataSize <= firstBlockOffset {
			return removeIncomplete("metadata file header never completed")
		}
		return errs.Newf(errs.Corrupt, "lbm.Open", metaPath, "bad metadata file header at offset 0")
	}
	if err != nil {
		meta.Close()
		return err
	}
	s.metrics.replaySeconds.WithLabelValues(path).Observe(time.Since(t0).Seconds())
	if !hasData {
		meta.Close()
		if len(st.blocks) == 0 {
			// Dead-container removal deletes .data first: finish the job.
			if err := s.fs.Remove(metaPath); err != nil {
				return ioErr(metaPath, err)
			}
			return s.fs.SyncDir(d.path)
		}
		return errs.Newf(errs.Corrupt, "lbm.Open", metaPath, "%d live blocks but no data file", len(st.blocks))
	}
	if end < size {
		// A torn tail: nothing past end was acknowledged.
		s.log.Warn("lbm: truncating torn metadata tail", "file", metaPath, "offset", end,
			"bytes", size-end, "kind", tail.String())
		err := meta.Truncate(end)
		if err == nil {
			err = meta.Sync()
		}
		if err != nil {
			meta.Close()
			return ioErr(metaPath, err)
		}
		s.metrics.truncations.Inc()
	}
	if c.data, err = s.fs.OpenFile(dataPath, os.O_RDWR, 0); err != nil {
		meta.Close()
		return ioErr(dataPath, err)
	}
	// New blocks go past the end of the data file, not just past the last
	// CREATE: bytes written but never committed before a crash keep their
	// range, so no CTR keystream position ever encrypts two plaintexts.
	c.metaOff, c.nextBlock, c.created, c.blocks = end, max(st.next, alignUp(dataSize)), st.created, st.blocks
	c.rbws = st.rbws // candidates; settleWaiting keeps the waiting replicas
	var added int64  // extents added to s.used
	var dups []dupEntry
	for bid, e := range st.blocks {
		if !s.index.insert(bid, e) {
			if cur, ok := s.index.get(bid); ok && cur.gen == e.gen {
				// Take back what this container already published: it may
				// be set aside, and the other container keeps the id.
				for id := range st.blocks {
					s.index.removeIf(id, c)
				}
				s.used.Add(-added)
				c.data.Close()
				meta.Close()
				return errs.Newf(errs.Corrupt, "lbm.Open", metaPath,
					"block %d is live in two containers with generation stamp %d", bid, e.gen)
			}
			// Live in another container with another generation stamp: a
			// Replace commit whose DELETE of the old version a crash cut
			// off. Open keeps the higher one once every container is in.
			dups = append(dups, dupEntry{id: bid, e: e})
		}
		c.liveBytes += e.length
		added += e.extent()
		s.used.Add(e.extent())
	}
	if len(dups) > 0 {
		s.dupMu.Lock()
		s.dups = append(s.dups, dups...)
		s.dupMu.Unlock()
	}
	d.mu.Lock()
	d.all[c] = struct{}{}
	d.mu.Unlock()
	s.metrics.containers.Inc()
	s.statsMu.Lock()
	s.stats.Records += st.records
	if path == "inmem" {
		s.stats.InmemContainers++
	} else {
		s.stats.StreamingContainers++
	}
	if end < size {
		s.stats.TruncatedTails++
	}
	s.statsMu.Unlock()
	return nil
}

// parseHeaders checks the (decrypted) headers at the start of a metadata
// file. It returns the header length, the cipher and the sealed flag; ok is
// false when the header is missing or invalid.
func (s *Store) parseHeaders(c *container, raw []byte) (hdrLen int64, fc *fileCipher, sealed, ok bool, err error) {
	h := raw
	if isEncHeader(raw) {
		if len(raw) < encHeaderLen+fileHeaderLen {
			return 0, nil, false, false, nil
		}
		if fc, err = s.keys.openHeader(c.metaPath, raw); err != nil {
			return 0, nil, false, false, err
		}
		var tmp [fileHeaderLen]byte
		fc.xorAt(tmp[:], raw[encHeaderLen:encHeaderLen+fileHeaderLen], encHeaderLen)
		h, hdrLen = tmp[:], encHeaderLen
	}
	flags, ok := decodeFileHeader(h, metaMagic)
	return hdrLen + fileHeaderLen, fc, flags&flagSealed != 0, ok, nil
}
