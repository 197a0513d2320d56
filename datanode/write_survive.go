package datanode

import "github.com/blockfs/blockfs/errs"

// A write that outlives its downstream. blockfs's own client rebuilds a
// pipeline whose member failed (client/writer.go), so the gRPC door fails
// the whole write and names the member. An HDFS client through the data
// transfer door may not be able to: github.com/colinmarc/hdfs, for one,
// never rebuilds a pipeline and fails the file on any ack that is not all
// SUCCESS. So a write the door feeds (the first datanode of an HDFS
// client's pipeline) goes on when a datanode downstream of it fails once
// the write is under way (one unreachable at setup is still named in
// firstBadLink, for a client to ask for another pipeline), as
// HDFS's own clients do with replace-datanode-on-failure off: the packets
// are verified and stored here whatever the downstream does, the
// downstream is dropped, every later packet is acknowledged on this
// datanode's copy alone, and the replica is reported as usual; the
// namenode sees fewer replicas than the file's replication once the
// block is complete and re-replicates it. A downstream that is still up
// keeps its partial copy as a replica being written, under the same
// generation stamp (no client bumped it): a re-replication of the
// complete block to it replaces that copy (dropLeftover). This datanode
// failing, or the write being cancelled, still fails the write.

// survivesDownstream reports whether this write goes on without its
// downstream: one the HDFS data transfer door feeds, while the call
// itself is not over.
func (w *writeStream) survivesDownstream() bool {
	s, ok := w.up.(interface{ survivesDownstream() bool })
	return ok && s.survivesDownstream() && w.ctx.Err() == nil
}

// loseDownstream drops the downstream that failed (err; bad the member it
// blames): the responder takes no more acks from it,
// and the receive loop's sends on its ended stream are no-ops.
func (w *writeStream) loseDownstream(bad string, err error) {
	w.dsLost = true
	w.d.met.lostDownstreams.Inc()
	w.d.log.Warn("downstream datanode failed; the write goes on without it", "block", w.name, "bad", bad,
		"kind", errs.KindOf(err), "err", err)
}

// dropLeftover drops, for a re-replication of a complete block, a
// replica of it being written here that no stream owns and no recovery
// claimed, under no newer generation stamp and no longer than the block:
// a prefix of the block that a pipeline left here when it went on
// without this datanode. It reports whether it dropped one.
func (w *writeStream) dropLeftover() bool {
	const op = "WriteBlock"
	d, b := w.d, w.h.Block
	r := d.rbws.get(b.Id)
	if r == nil {
		return false
	}
	m := r.bw.Meta()
	r.mu.Lock()
	free := r.owner == nil && r.recovering == 0
	r.mu.Unlock()
	had := r.bw.Written()
	if !free || m.GenStamp > b.GenStamp || had > int64(b.Length) {
		return false
	}
	if err := r.claim(w.ctx, op, w.cancel); err != nil {
		return false
	}
	d.rbws.remove(r)
	r.bw.Abort()
	d.log.Info("a re-replication replaces a replica left being written", "block", w.name, "gen", m.GenStamp,
		"had", had, "length", b.Length)
	return true
}
