package client

import (
	"context"
	"sync"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/security"
)

// PutFile writes data as the whole of file p and closes it. A file of one
// block of at most Config.FanOutMax bytes is made in one Raft entry: a
// file PrepareFile prepared (its ids, datanodes and write token; no
// entry, and one call for Config.PrepareAhead files), the block to every
// replica side by side, then PutFile, which creates the file complete
// with it. The file does not exist until PutFile succeeds: there is no
// lease and no file under construction to recover, and readers see it
// whole or not at all. If every replica fails side by side, or data is
// empty or larger, the file is written as WriteFile writes it, with the
// pipeline's recovery.
func (c *Client) PutFile(ctx context.Context, p string, data []byte, o CreateOptions) error {
	if len(data) == 0 || len(data) > c.cfg.FanOutMax || (o.BlockSize != 0 && uint64(len(data)) > o.BlockSize) {
		return c.WriteFile(ctx, p, data, o)
	}
	creq := &api.CreateRequest{
		Path: p, Mode: o.Perm, Overwrite: o.Overwrite, CreateParent: !o.NonRecursive,
		Replication: o.Replication, BlockSize: o.BlockSize, ClientName: c.cfg.User,
	}
	pf, err := c.prepare(ctx, creq)
	if err != nil {
		return err
	}
	if uint64(len(data)) > pf.blockSize { // the namenode's default block size is smaller
		return c.WriteFile(ctx, p, data, o)
	}
	f := pf.f
	w := &Writer{c: c, ctx: ctx, path: p, inode: f.InodeId, closed: true,
		cur: &blockWrite{lb: f.Block, token: f.Token, bpc: pf.bpc, buf: data}}
	// PutFile goes as soon as the replicas the namenode needs are stored;
	// the others finish meanwhile, and PutFile returns only once every
	// replica did (stored or failed), as when it waited for all first.
	fw := w.startSideBySide()
	defer fw.await(len(fw.streams))
	need := len(fw.streams)
	if pf.minRepl > 0 {
		need = min(need, pf.minRepl)
	}
	fw.await(need)
	ack, _, _ := fw.result()
	if ack == nil {
		// Nothing is stored anywhere and nothing was created: the usual
		// write, with its pipeline recovery, takes over.
		return c.WriteFile(ctx, p, data, o)
	}
	crc := ack.Crc32C
	blk := &api.Block{Id: f.Block.Block.Id, GenStamp: f.Block.Block.GenStamp, Length: ack.Length, Crc32C: &crc}
	c.locs.drop(p, nil) // an overwrite: before the call, and after it if it failed
	gen := c.locs.generation(p)
	var located *api.GetBlockLocationsResponse
	err = c.call(ctx, "PutFile", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.PutFile(ctx, &api.PutFileRequest{Create: creq, InodeId: f.InodeId, Block: blk, Token: f.Token,
			Receipts: ack.Receipts, Writing: fw.writing(), WantLocations: c.locs != nil}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		located = r.GetLocated()
		return err
	})
	if err != nil {
		c.locs.drop(p, nil) // it may have been applied
		return err
	}
	w.blocks = []*api.Block{blk}
	if c.locs != nil && security.UnverifiedGrants(f.Token, security.Read) {
		w.readToken = f.Token
	}
	w.cacheLocations(located, gen)
	return nil
}

// preparedTTL is how long a file prepared ahead is used: well within the
// time the namenode takes its PutFile (the token's lifetime, or half the
// namenode's unknown-replica grace: 5 s in localcluster), and short
// enough that its datanodes were chosen from a recent view of the
// cluster.
const preparedTTL = 2 * time.Second

// preparedPool holds the files prepared ahead, by the kind of file they
// were prepared for (what their placement and token depend on).
type preparedPool struct {
	mu sync.Mutex
	m  map[prepKind][]preparedFile
}

type prepKind struct {
	replication, mode uint32
	blockSize         uint64
}

type preparedFile struct {
	f         *api.PreparedFile
	bpc       int
	blockSize uint64
	minRepl   int // PrepareFileResponse.min_replication
	at        time.Time
}

// prepare returns a prepared file for creq's kind: one kept from an
// earlier call if fresh, else the first of a new PrepareFile's.
func (c *Client) prepare(ctx context.Context, creq *api.CreateRequest) (preparedFile, error) {
	k := prepKind{replication: creq.Replication, mode: creq.Mode, blockSize: creq.BlockSize}
	pp := &c.prepared
	pp.mu.Lock()
	for q := pp.m[k]; len(q) > 0; q = pp.m[k] {
		x := q[len(q)-1]
		pp.m[k] = q[:len(q)-1]
		if time.Since(x.at) < preparedTTL {
			pp.mu.Unlock()
			return x, nil
		}
	}
	pp.mu.Unlock()
	n := c.cfg.PrepareAhead
	if n == 0 {
		n = 8
	}
	var resp *api.PrepareFileResponse
	err := c.call(ctx, "PrepareFile", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.PrepareFile(ctx, &api.PrepareFileRequest{Create: creq, Count: uint32(n)}, trailerOpt(ctx))
		resp = r
		c.saw(r.GetHeader())
		return err
	})
	if err != nil {
		return preparedFile{}, err
	}
	bpc, bs := int(resp.BytesPerChecksum), resp.BlockSize
	fs := resp.Files
	if len(fs) == 0 || !chunks.Valid(bpc) || bs == 0 {
		return preparedFile{}, errs.Newf(errs.Internal, "client.Client.PutFile", creq.Path, "namenode prepared %d files with %d bytes per checksum, blocks of %d", len(fs), bpc, bs)
	}
	for _, f := range fs {
		if f.GetBlock().GetBlock() == nil {
			return preparedFile{}, errs.New(errs.Internal, "client.Client.PutFile", creq.Path, "namenode prepared a file without a block")
		}
	}
	now := time.Now()
	first := preparedFile{f: fs[0], bpc: bpc, blockSize: bs, minRepl: int(resp.MinReplication), at: now}
	if len(fs) > 1 {
		pp.mu.Lock()
		if pp.m == nil {
			pp.m = map[prepKind][]preparedFile{}
		}
		for _, f := range fs[1:] {
			x := first
			x.f = f
			pp.m[k] = append(pp.m[k], x)
		}
		pp.mu.Unlock()
	}
	return first, nil
}
