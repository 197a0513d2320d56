package namenode

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode/attrs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namespace"
)

// attrsCore gives package attrs (xattrs, times, truncate, the server's
// defaults and figures) the namenode's parts it needs.
type attrsCore struct{ n *Namenode }

func newClientService(n *Namenode) *clientService {
	return &clientService{Service: attrs.New(attrsCore{n}), n: n}
}

func (a attrsCore) Propose(ctx context.Context, op string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, uint64, error) {
	return a.n.propose(ctx, op, t, msg)
}
func (a attrsCore) Caller(ctx context.Context) *api.Caller     { return a.n.caller(ctx) }
func (a attrsCore) ReadCaller(ctx context.Context) *api.Caller { return a.n.readCaller(ctx) }
func (a attrsCore) ReadBarrier(ctx context.Context, op string, o *api.ReadOptions) error {
	return a.n.readBarrier(ctx, op, o)
}
func (a attrsCore) View(fn func(fsm.Reader))                   { a.n.fsm.View(fn) }
func (a attrsCore) Header() *api.ResponseHeader                { return a.n.header() }
func (a attrsCore) WriteHeader(idx uint64) *api.ResponseHeader { return a.n.writeHeader(idx) }
func (a attrsCore) Audited(ctx context.Context, cmd, src, dst string, st *api.FileStatus, err error) {
	a.n.audited(ctx, cmd, src, dst, st, err)
}
func (a attrsCore) NowMs() int64                          { return a.n.nowMs() }
func (a attrsCore) RecoveryCandidates(id uint64) []string { return a.n.recoveryCandidates(id) }
func (a attrsCore) XAttrLimits() namespace.XAttrLimits {
	c := a.n.cfg.Namespace
	return namespace.XAttrLimits{MaxPerInode: c.MaxXAttrsPerInode, MaxSize: c.MaxXAttrSize}
}

// ServerDefaults: the namespace's defaults; the packet and buffer sizes
// are HDFS's client defaults (dfs.client-write-packet-size,
// io.file.buffer.size), which blockfs's doors accept as they come.
func (a attrsCore) ServerDefaults() *api.ServerDefaults {
	c := a.n.cfg.Namespace
	return &api.ServerDefaults{BlockSize: c.DefaultBlockSize, BytesPerChecksum: c.BytesPerChecksum, WritePacketSize: 64 << 10,
		Replication: c.DefaultReplication, FileBufferSize: 4096, TrashIntervalMs: a.n.cfg.TrashInterval.Milliseconds(), ChecksumType: "CRC32C"}
}

// FsStats is HDFS's getFsStats from this namenode's block map.
func (a attrsCore) FsStats() *api.GetFsStatsResponse {
	st := a.n.blocks.Stats()
	out := &api.GetFsStatsResponse{Capacity: st.Capacity, Used: st.Used, Remaining: st.Capacity - min(st.Used, st.Capacity),
		UnderReplicated: uint64(st.UnderReplicated), CorruptBlocks: uint64(st.Corrupt), PendingDeletionBlocks: uint64(st.PendingDeletion)}
	for _, id := range a.n.blocks.UnderReplicated() {
		if live, want := a.n.blocks.NeededReplication(id); live == 0 && want > 0 {
			out.MissingBlocks++
			if want == 1 {
				out.MissingReplOneBlocks++
			}
		}
	}
	return out
}
