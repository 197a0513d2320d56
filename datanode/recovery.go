package datanode

import (
	"context"
	"slices"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

// Block recovery (HDFS's BlockRecoveryWorker): the namenode makes one
// datanode the primary of a recovery of a file's last block, with a new
// generation stamp (the recovery id). The primary asks every replica's
// datanode for its replica (InitReplicaRecovery, which also stops any
// stream still writing it), picks the length they all hold, has each cut
// its replica to that length and finalize it under the recovery id
// (UpdateReplicaUnderRecovery), and reports to the namenode
// (CommitBlockSynchronization), which closes the file. Every step can be
// repeated: a newer recovery id wins, an older one is refused.

// checkRecovery checks a recovery call: from a datanode, with a recovery
// token for (inode, block, recovery id) that names this datanode.
func (d *Datanode) checkRecovery(ctx context.Context, op string, token []byte, inode, blockID, rid uint64) error {
	caller, _ := security.IdentityFromContext(ctx)
	if caller.Role != security.RoleDatanode {
		return errs.Newf(errs.Permission, op, blockName(blockID), "%s may not recover replicas: block recovery comes from datanodes", caller)
	}
	c, err := d.tokens.check(ctx, token, security.Request{Inode: inode, BlockID: blockID, GenStamp: rid, Access: security.Write})
	if err != nil {
		return err
	}
	if !security.RecoveryTargets(c.User, d.id) {
		return errs.Newf(errs.Permission, op, blockName(blockID), "recovery token is for %q, not for datanode %s", c.User, d.id)
	}
	return nil
}

func (s *dataService) InitReplicaRecovery(ctx context.Context, req *api.InitReplicaRecoveryRequest) (*api.InitReplicaRecoveryResponse, error) {
	const op = "InitReplicaRecovery"
	b := req.GetBlock()
	if b == nil || req.RecoveryId == 0 {
		return nil, errs.New(errs.Invalid, op, "", "block and recovery_id are required")
	}
	if err := s.d.checkRecovery(ctx, op, req.Token, req.InodeId, b.Id, req.RecoveryId); err != nil {
		return nil, err
	}
	return s.d.initReplicaRecovery(ctx, b.Id, req.RecoveryId)
}

// initReplicaRecovery reports the local replica of block id, stopping and
// claiming one being written for recovery rid.
func (d *Datanode) initReplicaRecovery(ctx context.Context, id, rid uint64) (*api.InitReplicaRecoveryResponse, error) {
	const op = "InitReplicaRecovery"
	if r := d.rbws.get(id); r != nil {
		r.mu.Lock()
		newer := r.recovering > rid
		if !newer {
			r.recovering = rid
		}
		r.mu.Unlock()
		if newer {
			return nil, errs.Newf(errs.Precondition, op, blockName(id), "a newer recovery (%d) holds the replica", r.recovering)
		}
		if err := r.claim(ctx, op, nil); err != nil {
			return nil, err
		}
		r.release() // stays detached; UpdateReplicaUnderRecovery finalizes it
		m := r.bw.Meta()
		if m.GenStamp >= rid {
			return nil, errs.Newf(errs.Precondition, op, blockName(id), "the replica has generation %d, not older than recovery %d", m.GenStamp, rid)
		}
		return &api.InitReplicaRecoveryResponse{State: api.ReplicaState_REPLICA_STATE_RBW, GenStamp: m.GenStamp, Length: uint64(m.Length)}, nil
	}
	if info, ok := d.store.Stat(id); ok {
		return &api.InitReplicaRecoveryResponse{State: api.ReplicaState_REPLICA_STATE_FINALIZED, GenStamp: info.GenStamp, Length: uint64(info.Length)}, nil
	}
	// A replica hsynced before a restart (HDFS's RWR) is reported as
	// being written, with the bytes it synced.
	if w, ok := d.store.Waiting(id); ok {
		if w.GenStamp >= rid {
			return nil, errs.Newf(errs.Precondition, op, blockName(id), "the waiting replica has generation %d, not older than recovery %d", w.GenStamp, rid)
		}
		return &api.InitReplicaRecoveryResponse{State: api.ReplicaState_REPLICA_STATE_RBW, GenStamp: w.GenStamp, Length: uint64(w.Length)}, nil
	}
	return &api.InitReplicaRecoveryResponse{State: api.ReplicaState_REPLICA_STATE_NONE}, nil
}

func (s *dataService) UpdateReplicaUnderRecovery(ctx context.Context, req *api.UpdateReplicaUnderRecoveryRequest) (*api.UpdateReplicaUnderRecoveryResponse, error) {
	const op = "UpdateReplicaUnderRecovery"
	b := req.GetBlock()
	if b == nil || req.RecoveryId == 0 {
		return nil, errs.New(errs.Invalid, op, "", "block and recovery_id are required")
	}
	if err := s.d.checkRecovery(ctx, op, req.Token, req.InodeId, b.Id, req.RecoveryId); err != nil {
		return nil, err
	}
	var info lbm.BlockInfo
	var err error
	if req.CopyFrom != nil {
		info, err = s.d.copyOnTruncate(ctx, b.Id, req.RecoveryId, req.InodeId, req.CopyFrom, int64(req.NewLength))
	} else {
		info, err = s.d.updateReplicaUnderRecovery(ctx, b.Id, req.RecoveryId, int64(req.NewLength))
	}
	if err != nil {
		return nil, err
	}
	crc := info.CRC
	return &api.UpdateReplicaUnderRecoveryResponse{Block: &api.Block{Id: info.ID, GenStamp: info.GenStamp, Length: uint64(info.Length), Crc32C: &crc}}, nil
}

// updateReplicaUnderRecovery cuts the local replica of block id to n bytes
// and finalizes it under recovery id rid.
func (d *Datanode) updateReplicaUnderRecovery(ctx context.Context, id, rid uint64, n int64) (lbm.BlockInfo, error) {
	const op = "UpdateReplicaUnderRecovery"
	if r := d.rbws.get(id); r != nil {
		r.mu.Lock()
		mine := r.recovering == rid
		r.mu.Unlock()
		if !mine {
			return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(id), "the replica is not held by recovery %d", rid)
		}
		if err := r.claim(ctx, op, nil); err != nil {
			return lbm.BlockInfo{}, err
		}
		if r.bw.Written() < n {
			r.release()
			return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(id), "the replica holds %d bytes, fewer than %d", r.bw.Written(), n)
		}
		if err := r.bw.Truncate(n); err != nil {
			r.release()
			return lbm.BlockInfo{}, err
		}
		if err := r.bw.SetGenStamp(rid); err != nil {
			r.release()
			return lbm.BlockInfo{}, err
		}
		info, err := r.bw.Commit(ctx)
		d.rbws.remove(r)
		if err != nil {
			return lbm.BlockInfo{}, err
		}
		d.reportReceived(info)
		return info, nil
	}
	info, ok := d.store.Stat(id)
	if w, waiting := d.store.Waiting(id); !ok && waiting {
		// A waiting replica (hsynced before a restart): its first n
		// bytes, checked against its RBW record, become the block.
		switch {
		case w.GenStamp >= rid:
			return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(id), "the waiting replica has generation %d, not older than recovery %d", w.GenStamp, rid)
		case w.Length < n:
			return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(id), "the waiting replica holds %d bytes, fewer than %d", w.Length, n)
		}
		out, err := d.store.RecoverWaiting(ctx, id, rid, n)
		if err != nil {
			return lbm.BlockInfo{}, err
		}
		d.reportReceived(out)
		return out, nil
	}
	switch {
	case !ok:
		return lbm.BlockInfo{}, errs.Newf(errs.NotFound, op, blockName(id), "no replica on datanode %s", d.id)
	case info.GenStamp == rid && info.Length == n:
		return info, nil // done before: a repeated call
	case info.GenStamp >= rid:
		return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(id), "the replica has generation %d, not older than recovery %d", info.GenStamp, rid)
	case info.Length < n:
		return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(id), "the replica holds %d bytes, fewer than %d", info.Length, n)
	}
	// A new version of the replica, replacing it.
	return d.finalizeCopy(ctx, lbm.BlockMeta{ID: id, Inode: info.Inode, GenStamp: rid}, true, info, n)
}

// finalizeCopy writes block m from the first n bytes of local replica
// src, finalizes it (replacing a replica of the same id when replace) and
// reports it received.
func (d *Datanode) finalizeCopy(ctx context.Context, m lbm.BlockMeta, replace bool, src lbm.BlockInfo, n int64) (lbm.BlockInfo, error) {
	bpc := d.replicaBytesPerChecksum(src)
	bw, err := d.store.CreateWith(ctx, m, lbm.CreateOptions{BytesPerChecksum: bpc, OpenEnded: true, Replace: replace})
	if err != nil {
		return lbm.BlockInfo{}, err
	}
	if err := d.copyPrefix(ctx, src.ID, n, bw, bpc); err != nil {
		bw.Abort()
		return lbm.BlockInfo{}, err
	}
	out, err := bw.Commit(ctx)
	if err != nil {
		return lbm.BlockInfo{}, err
	}
	d.reportReceived(out)
	return out, nil
}

// recoverBlock runs a recovery this datanode is the primary of.
func (d *Datanode) recoverBlock(c *api.RecoverBlockCommand) {
	ctx, cancel := context.WithTimeout(d.ctx, 4*d.cfg.RPCTimeout)
	defer cancel()
	b, rid := c.GetBlock(), c.RecoveryId
	log := d.log.With("block", b.GetId(), "recovery", rid)
	type replica struct {
		node  *api.DatanodeInfo
		state *api.InitReplicaRecoveryResponse
	}
	// Replicas under the block's stamp or a newer one (a rebuilt
	// pipeline's) count; so do, when there is none of those, finalized
	// replicas of an older stamp that hold the block's recorded length: a
	// block reopened by an append whose writer died before its pipeline
	// copied them keeps its committed bytes.
	var found, older []replica
	for _, dn := range c.Replicas {
		if c.CopyFrom != nil {
			// Copy-on-truncate: every replica of the snapshot's block,
			// finalized and whole, is a source (recovery_copy.go).
			found = append(found, replica{dn, &api.InitReplicaRecoveryResponse{Length: c.CopyFrom.GetLength()}})
			continue
		}
		st, err := d.peerInit(ctx, dn, c)
		if err != nil {
			log.Warn("replica recovery: no answer", "datanode", dn.Id, "err", err)
			continue
		}
		switch {
		case st.State == api.ReplicaState_REPLICA_STATE_NONE:
		case st.GenStamp >= b.GetGenStamp():
			found = append(found, replica{dn, st})
		case st.State == api.ReplicaState_REPLICA_STATE_FINALIZED && st.Length >= b.GetLength():
			older = append(older, replica{dn, st})
		}
	}
	// The length: a finalized replica's, if any holds the block whole;
	// else the shortest replica being written (every byte acknowledged to
	// the writer is on every replica of the pipeline); from older
	// replicas, the recorded length.
	var length uint64
	fin := slices.IndexFunc(found, func(r replica) bool { return r.state.State == api.ReplicaState_REPLICA_STATE_FINALIZED })
	if len(found) == 0 && len(older) > 0 {
		found, length = older, b.GetLength()
	} else if fin >= 0 {
		length = found[fin].state.Length
	} else if len(found) > 0 {
		length = found[0].state.Length
		for _, r := range found[1:] {
			length = min(length, r.state.Length)
		}
	}
	if t := c.TruncateLength; t != nil {
		// A truncate's (HDFS's truncate inside a block): every replica
		// holding the bytes is cut to exactly the new length.
		found, length = append(found, older...), *t
	}
	req := &api.CommitBlockSynchronizationRequest{DatanodeId: d.id, InodeId: c.InodeId, Block: b, RecoveryId: rid, NewLength: length}
	var crc *uint32
	for _, r := range found {
		if r.state.Length < length {
			continue
		}
		got, err := d.peerUpdate(ctx, r.node, c, length)
		if err != nil {
			log.Warn("replica recovery: update failed", "datanode", r.node.Id, "err", err)
			continue
		}
		if crc != nil && got.Crc32C != nil && *got.Crc32C != *crc {
			log.Error("replica recovery: replicas of the same length differ", "datanode", r.node.Id)
			continue
		}
		if crc == nil {
			crc = got.Crc32C
		}
		req.StoredOn = append(req.StoredOn, r.node.Id)
	}
	req.Crc32C = crc
	if len(req.StoredOn) == 0 {
		if len(found) > 0 || c.CopyFrom != nil {
			d.met.blockRecovery.WithLabelValues("failed").Inc()
			log.Warn("replica recovery: no replica finalized; the namenode will retry")
			return
		}
		req.DeleteBlock = true
	}
	if err := d.commitBlockSync(ctx, req); err != nil {
		d.met.blockRecovery.WithLabelValues("failed").Inc()
		log.Warn("commit block synchronization", "err", err)
		return
	}
	result := "committed"
	if req.DeleteBlock {
		result = "deleted"
	}
	d.met.blockRecovery.WithLabelValues(result).Inc()
	log.Info("block recovered", "length", length, "stored_on", req.StoredOn, "deleted", req.DeleteBlock)
}

func (d *Datanode) peerInit(ctx context.Context, dn *api.DatanodeInfo, c *api.RecoverBlockCommand) (*api.InitReplicaRecoveryResponse, error) {
	if dn.Id == d.id {
		return d.initReplicaRecovery(ctx, c.Block.GetId(), c.RecoveryId)
	}
	conn, err := d.conn("InitReplicaRecovery", dn.Addr)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.RPCTimeout)
	defer cancel()
	r, err := api.NewDataServiceClient(conn).InitReplicaRecovery(rctx, &api.InitReplicaRecoveryRequest{
		Block: c.Block, InodeId: c.InodeId, RecoveryId: c.RecoveryId, Token: c.Token})
	return r, errs.FromStatus(err, nil)
}

func (d *Datanode) peerUpdate(ctx context.Context, dn *api.DatanodeInfo, c *api.RecoverBlockCommand, length uint64) (*api.Block, error) {
	if dn.Id == d.id {
		var info lbm.BlockInfo
		var err error
		if c.CopyFrom != nil {
			info, err = d.copyOnTruncate(ctx, c.Block.GetId(), c.RecoveryId, c.InodeId, c.CopyFrom, int64(length))
		} else {
			info, err = d.updateReplicaUnderRecovery(ctx, c.Block.GetId(), c.RecoveryId, int64(length))
		}
		if err != nil {
			return nil, err
		}
		crc := info.CRC
		return &api.Block{Id: info.ID, GenStamp: info.GenStamp, Length: uint64(info.Length), Crc32C: &crc}, nil
	}
	conn, err := d.conn("UpdateReplicaUnderRecovery", dn.Addr)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.RPCTimeout)
	defer cancel()
	r, err := api.NewDataServiceClient(conn).UpdateReplicaUnderRecovery(rctx, &api.UpdateReplicaUnderRecoveryRequest{
		Block: c.Block, InodeId: c.InodeId, RecoveryId: c.RecoveryId, NewLength: length, Token: c.Token, CopyFrom: c.CopyFrom})
	if err != nil {
		return nil, errs.FromStatus(err, nil)
	}
	return r.Block, nil
}

// commitBlockSync reports a recovery to the namenodes until one takes it
// (a follower forwards it to the leader).
func (d *Datanode) commitBlockSync(ctx context.Context, req *api.CommitBlockSynchronizationRequest) error {
	var last error
	for _, addr := range d.cfg.Namenodes {
		conn, err := d.conn("CommitBlockSynchronization", addr)
		if err != nil {
			last = err
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, d.cfg.RPCTimeout)
		_, err = api.NewDatanodeProtocolClient(conn).CommitBlockSynchronization(rctx, req)
		cancel()
		if err == nil {
			return nil
		}
		last = errs.FromStatus(err, nil)
		if errs.KindOf(last) == errs.Precondition || errs.KindOf(last) == errs.Permission {
			return last
		}
	}
	return last
}
