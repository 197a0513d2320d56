package datanode

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

// actor talks to one namenode: registration, block reports, heartbeats and
// incremental reports (HDFS's BPServiceActor).
type actor struct {
	d    *Datanode
	addr string

	mu       sync.Mutex
	received map[uint64]*api.ReportedBlock
	deleted  map[uint64]*api.Block
	// verified are answers to VerifyBlock commands not yet sent. A full
	// report does not replace them: it says what is held, not what was
	// checked.
	verified map[uint64]*api.Block
	kick     chan struct{}
	// leader is what the namenode last said of itself (true until it has
	// said anything): a follower's reports wait FollowerReportDelay.
	leader atomic.Bool
	// receipt is the key this namenode gave at the last registration
	// (receipts.go); nil before one, or from a namenode that gave none.
	receipt atomic.Pointer[security.ReceiptKey]
}

func newActor(d *Datanode, addr string) *actor {
	a := &actor{d: d, addr: addr, received: map[uint64]*api.ReportedBlock{}, deleted: map[uint64]*api.Block{},
		verified: map[uint64]*api.Block{}, kick: make(chan struct{}, 1)}
	a.leader.Store(true)
	return a
}

func (a *actor) client(op string) (api.DatanodeProtocolClient, error) {
	conn, err := a.d.conn(op, a.addr)
	if err != nil {
		return nil, err
	}
	return api.NewDatanodeProtocolClient(conn), nil
}

func (a *actor) run() {
	d := a.d
	defer d.wg.Done()
	log := d.log.With("namenode", a.addr)
	registered := a.register() == nil
	lastFull := time.Now()
	failing := false
	hb := time.NewTicker(d.cfg.HeartbeatInterval)
	defer hb.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-hb.C:
			if !registered {
				if err := a.register(); err != nil {
					if !failing {
						log.Warn("register failed", "err", err)
						failing = true
					}
					continue
				}
				registered, failing, lastFull = true, false, time.Now()
				log.Info("registered and sent a full block report")
				continue
			}
			resp, err := a.heartbeat()
			if err != nil {
				d.met.heartbeatFails.WithLabelValues(a.addr).Inc()
				if !failing {
					log.Warn("heartbeat failed", "err", err)
					failing = true
				}
				// The namenode may have declared us dead meanwhile: register
				// and send a full report once it answers again.
				registered = false
				continue
			}
			failing = false
			if resp.Reregister {
				registered = false
				continue
			}
			a.leader.Store(resp.IsLeader)
			if resp.KeysChanged {
				d.tokens.merge(resp.Keys)
			}
			if resp.FullReport {
				if err := a.fullReport(); err != nil {
					registered = false
				}
			}
			d.dispatch(resp.Commands)
			if d.cfg.FullReportInterval > 0 && time.Since(lastFull) >= d.cfg.FullReportInterval {
				if err := a.fullReport(); err != nil {
					registered = false
				} else {
					lastFull = time.Now()
				}
			}
		case <-a.kick:
			delay := d.cfg.IncrementalReportDelay
			if !a.leader.Load() {
				delay = max(delay, d.cfg.FollowerReportDelay)
			}
			if delay > 0 {
				select {
				case <-d.ctx.Done():
					return
				case <-time.After(delay):
				}
			}
			if registered {
				if err := a.flushIncremental(); err != nil {
					log.Debug("incremental block report failed", "err", err)
				}
			}
		}
	}
}

func (a *actor) rpcCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(a.d.ctx, a.d.cfg.RPCTimeout)
}

// register registers with the namenode and sends a full block report.
func (a *actor) register() error {
	nn, err := a.client("Register")
	if err != nil {
		return err
	}
	ctx, cancel := a.rpcCtx()
	defer cancel()
	resp, err := nn.Register(ctx, &api.RegisterRequest{Node: a.d.Info()})
	if err != nil {
		return errs.FromStatus(err, nil)
	}
	a.leader.Store(resp.IsLeader)
	a.setReceiptKey(resp)
	return a.fullReport()
}

// fullReport sends every stored block. Queued incremental reports are
// dropped first: the snapshot taken after covers them.
func (a *actor) fullReport() error {
	nn, err := a.client("BlockReport")
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.received = map[uint64]*api.ReportedBlock{}
	a.deleted = map[uint64]*api.Block{}
	a.mu.Unlock()
	bs := a.d.store.Blocks()
	per := a.d.cfg.ReportPartBlocks
	parts := max(1, (len(bs)+per-1)/per)
	id := a.d.reportIDs.Add(1)
	for part := range parts {
		chunk := bs[part*per : min((part+1)*per, len(bs))]
		req := &api.BlockReportRequest{DatanodeId: a.d.id, Blocks: make([]*api.ReportedBlock, len(chunk))}
		if parts > 1 {
			req.ReportId, req.Part, req.Parts = id, uint32(part), uint32(parts)
		}
		for i := range chunk {
			req.Blocks[i] = reported(chunk[i])
		}
		ctx, cancel := a.rpcCtx()
		resp, err := nn.BlockReport(ctx, req)
		cancel()
		if err != nil {
			return errs.FromStatus(err, nil)
		}
		a.d.dispatch(resp.Commands)
	}
	return nil
}

func (a *actor) heartbeat() (*api.HeartbeatResponse, error) {
	nn, err := a.client("Heartbeat")
	if err != nil {
		return nil, err
	}
	capacity, used, failed := a.d.usage()
	ctx, cancel := a.rpcCtx()
	defer cancel()
	resp, err := nn.Heartbeat(ctx, &api.HeartbeatRequest{
		DatanodeId: a.d.id, Capacity: capacity, Used: used, FailedVolumes: failed, KeyIds: a.d.tokens.keyIDs(),
	})
	if err != nil {
		return nil, errs.FromStatus(err, nil)
	}
	return resp, nil
}

// flushIncremental sends the queued changes; on failure they are queued
// again (unless newer news about the same block arrived meanwhile).
func (a *actor) flushIncremental() error {
	a.mu.Lock()
	rec, del, ver := a.received, a.deleted, a.verified
	if len(rec) == 0 && len(del) == 0 && len(ver) == 0 {
		a.mu.Unlock()
		return nil
	}
	a.received, a.deleted, a.verified = map[uint64]*api.ReportedBlock{}, map[uint64]*api.Block{}, map[uint64]*api.Block{}
	a.mu.Unlock()
	req := &api.IncrementalBlockReportRequest{DatanodeId: a.d.id}
	for _, r := range rec {
		req.Received = append(req.Received, r)
	}
	for _, b := range del {
		req.Deleted = append(req.Deleted, b)
	}
	for _, b := range ver {
		req.Verified = append(req.Verified, b)
	}
	nn, err := a.client("IncrementalBlockReport")
	if err == nil {
		ctx, cancel := a.rpcCtx()
		_, err = nn.IncrementalBlockReport(ctx, req)
		cancel()
	}
	if err != nil {
		a.mu.Lock()
		for id, r := range rec {
			if a.received[id] == nil && a.deleted[id] == nil {
				a.received[id] = r
			}
		}
		for id, b := range del {
			if a.received[id] == nil && a.deleted[id] == nil {
				a.deleted[id] = b
			}
		}
		for id, b := range ver {
			if a.verified[id] == nil && a.deleted[id] == nil {
				a.verified[id] = b
			}
		}
		a.mu.Unlock()
		a.signal()
		return errs.FromStatus(err, nil)
	}
	return nil
}

func (a *actor) signal() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *actor) enqueue(rec *api.ReportedBlock, del *api.Block) {
	a.mu.Lock()
	if rec != nil {
		delete(a.deleted, rec.Block.Id)
		a.received[rec.Block.Id] = rec
	}
	if del != nil {
		delete(a.received, del.Id)
		delete(a.verified, del.Id)
		a.deleted[del.Id] = del
	}
	a.mu.Unlock()
	a.signal()
}

func (a *actor) enqueueVerified(b *api.Block) {
	a.mu.Lock()
	a.verified[b.Id] = b
	a.mu.Unlock()
	a.signal()
}

func reported(b lbm.BlockInfo) *api.ReportedBlock {
	return &api.ReportedBlock{Block: &api.Block{Id: b.ID, GenStamp: b.GenStamp, Length: uint64(b.Length)}, InodeId: b.Inode}
}

// reportReceived queues an incremental "received" to every namenode; it
// never blocks on a namenode.
func (d *Datanode) reportReceived(b lbm.BlockInfo) {
	r := reported(b)
	for _, a := range d.actors {
		a.enqueue(r, nil)
	}
}

func (d *Datanode) reportDeleted(b *api.Block) {
	for _, a := range d.actors {
		a.enqueue(nil, b)
	}
}

// reportCorrupt tells every namenode (each keeps its own block map, and
// only the leader acts on it) that the local replica b is corrupt, once per
// replica.
func (d *Datanode) reportCorrupt(b lbm.BlockInfo) {
	if _, dup := d.corrupt.LoadOrStore(b.ID, struct{}{}); dup {
		return
	}
	d.met.corrupt.Inc()
	d.log.Error("corrupt replica", "block", b.ID, "container", b.Container)
	req := &api.ReportBadBlocksRequest{DatanodeId: d.id, Blocks: []*api.Block{{Id: b.ID, GenStamp: b.GenStamp, Length: uint64(b.Length)}}}
	for _, addr := range d.cfg.Namenodes {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			for attempt := 0; attempt < 5; attempt++ {
				conn, err := d.conn("ReportBadBlocks", addr)
				if err == nil {
					ctx, cancel := context.WithTimeout(d.ctx, d.cfg.RPCTimeout)
					_, err = api.NewClientServiceClient(conn).ReportBadBlocks(ctx, req)
					cancel()
					if err == nil {
						return
					}
				}
				d.log.Warn("report bad block", "namenode", addr, "block", b.ID, "err", err)
				select {
				case <-d.ctx.Done():
					return
				case <-time.After(d.cfg.HeartbeatInterval):
				}
			}
		}()
	}
}

// dispatch hands commands to the workers without blocking the heartbeat;
// when the queue is full a command is dropped (the leader re-issues work
// that does not complete).
func (d *Datanode) dispatch(cmds []*api.DatanodeCommand) {
	for _, c := range cmds {
		select {
		case d.cmds <- c:
		default:
			d.log.Warn("command queue full; dropping a command")
		}
	}
}

func (d *Datanode) commandWorker() {
	defer d.wg.Done()
	for {
		select {
		case <-d.ctx.Done():
			return
		case c := <-d.cmds:
			switch {
			case c.GetDelete() != nil:
				d.deleteBlocks(c.GetDelete().Blocks)
			case c.GetReplicate() != nil:
				d.replicate(c.GetReplicate())
			case c.GetVerify() != nil:
				d.verifyBlock(c.GetVerify().GetBlock())
			case c.GetRecover() != nil:
				d.recoverBlock(c.GetRecover())
			}
		}
	}
}

// deleteBlocks deletes replicas on a namenode's command and reports them
// deleted (also the ones already gone, so the namenode forgets them).
func (d *Datanode) deleteBlocks(bs []*api.Block) {
	ids := make([]uint64, 0, len(bs))
	for _, b := range bs {
		// A delete names the replica the namenode saw: a newer version
		// written since (an append, a recovery) is not that replica.
		if info, ok := d.store.Stat(b.GetId()); ok && info.GenStamp > b.GetGenStamp() {
			continue
		}
		ids = append(ids, b.GetId())
	}
	if err := d.store.DeleteBatch(d.ctx, ids); err != nil && !errs.Is(err, errs.NotFound) {
		d.log.Warn("delete blocks", "blocks", len(ids), "err", err)
	}
	for _, b := range bs {
		if _, still := d.store.Stat(b.GetId()); still {
			continue
		}
		d.corrupt.Delete(b.GetId())
		d.met.deletes.Inc()
		d.reportDeleted(&api.Block{Id: b.GetId(), GenStamp: b.GetGenStamp(), Length: b.GetLength()})
	}
}

// replicate runs a replicate command: the same transfer as TransferBlock.
func (d *Datanode) replicate(c *api.ReplicateBlockCommand) {
	id := c.GetBlock().GetId()
	if _, busy := d.inflight.LoadOrStore(id, struct{}{}); busy {
		return
	}
	defer d.inflight.Delete(id)
	timeout := 4 * d.cfg.RPCTimeout
	if bw := c.BalanceBandwidth; bw > 0 {
		// A paced move: its share of the bandwidth with the other workers.
		timeout += time.Duration(float64(c.GetBlock().GetLength()) * float64(d.cfg.CommandWorkers) / float64(bw) * float64(time.Second))
	}
	ctx, cancel := context.WithTimeout(d.ctx, timeout)
	defer cancel()
	stored, err := d.transfer(ctx, c.Block, c.InodeId, c.Token, c.Targets, d.balance.limiter(c.BalanceBandwidth))
	if err != nil {
		d.met.replications.WithLabelValues("error").Inc()
		d.log.Warn("replicate", "block", id, "err", err)
		return
	}
	d.met.replications.WithLabelValues("ok").Inc()
	d.log.Debug("replicated", "block", id, "to", stored)
}

// verifyBlock runs a verify command: it re-reads the local replica of b in
// full, which checks the stored CRC32C, and tells every namenode the result
// (each keeps its own block map; only the one that asked counts it). Intact:
// an incremental report's verified entry. Corrupt: ReportBadBlocks as this
// datanode, even if reported before (the asking namenode may not know).
// Gone or of another generation: reported deleted, so the namenode drops
// what it thought was here. An I/O error answers nothing; the namenode asks
// again later.
func (d *Datanode) verifyBlock(b *api.Block) {
	if b == nil {
		return
	}
	info, ok := d.store.Stat(b.Id)
	if !ok {
		d.reportDeleted(&api.Block{Id: b.Id, GenStamp: b.GenStamp, Length: b.Length})
		return
	}
	if info.GenStamp != b.GenStamp {
		d.log.Info("verify: the replica has another generation", "block", b.Id, "have", info.GenStamp, "asked", b.GenStamp)
		d.reportReceived(info)
		return
	}
	if want := b.Crc32C; want != nil && info.Length == int64(b.Length) && *want != info.CRC {
		// Intact as stored, but not the bytes the writer wrote (the
		// namespace's CRC32C, which the namenode puts in the command).
		d.log.Warn("verify: replica CRC32C differs from the namespace's", "block", b.Id, "have", info.CRC, "want", *want)
		d.corrupt.Delete(b.Id)
		d.reportCorrupt(info)
		return
	}
	ctx, cancel := context.WithTimeout(d.ctx, 4*d.cfg.RPCTimeout)
	defer cancel()
	if _, err := d.store.Read(ctx, b.Id, 0, info.Length); err != nil {
		if errs.Is(err, errs.Corrupt) {
			d.corrupt.Delete(b.Id)
			d.reportCorrupt(info)
			return
		}
		d.log.Warn("verify block", "block", b.Id, "err", err)
		return
	}
	d.log.Debug("verified block", "block", b.Id)
	v := &api.Block{Id: info.ID, GenStamp: info.GenStamp, Length: uint64(info.Length)}
	for _, a := range d.actors {
		a.enqueueVerified(v)
	}
}
