package datanode

import (
	"context"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/blockstream"
)

// transferWindow is the packets a transfer keeps unacknowledged.
const transferWindow = 8

// transfer copies the local replica of b to targets: the first target
// gets a replication WriteBlock whose pipeline is the rest. The replica
// is read chunk by chunk and sent with its stored chunk CRCs, so the
// targets check the bytes against what the writer computed; b.crc32c, if
// the namespace gave one, goes in the header for the targets to check
// the whole block against, and is checked here first. The bytes go no
// faster than p allows (a balancer move's pacer, balance.go), or with p
// nil the datanode's own (--replication-bandwidth).
func (d *Datanode) transfer(ctx context.Context, b *api.Block, inode uint64, token []byte, targets []*api.DatanodeInfo, p *pacer) ([]string, error) {
	if p == nil {
		p = d.pace
	}
	const op = "TransferBlock"
	name := blockName(b.GetId())
	if len(targets) == 0 {
		return nil, errs.New(errs.Invalid, op, name, "no targets")
	}
	info, err := d.statReplica(op, b)
	if err != nil {
		return nil, err
	}
	if want := b.Crc32C; want != nil && *want != info.CRC {
		d.reportCorrupt(info)
		return nil, errs.Newf(errs.Corrupt, op, name, "replica CRC32C %08x differs from the namespace's %08x", info.CRC, *want)
	}
	if info.Inode != 0 {
		inode = info.Inode
	}
	conn, err := d.conn(op, targets[0].Addr)
	if err != nil {
		return nil, err
	}
	bpc := d.replicaBytesPerChecksum(info)
	crc := info.CRC
	hdr := &api.WriteBlockHeader{
		Block:   &api.Block{Id: info.ID, GenStamp: info.GenStamp, Length: uint64(info.Length), Crc32C: &crc},
		InodeId: inode, Token: token, Pipeline: targets[1:], Replication: true, BytesPerChecksum: uint32(bpc),
	}
	w, err := blockstream.Start(ctx, api.NewDataServiceClient(conn), hdr, transferWindow)
	if err != nil {
		return nil, d.transferFailed(name, targets[0].Id, w, err)
	}
	span := max(int64(d.cfg.ChunkSize)/int64(bpc), 1) * int64(bpc)
	for pos := int64(0); ; {
		n := min(span, info.Length-pos)
		cr, err := d.readChunks(ctx, info.ID, pos, n, nil)
		if err != nil {
			w.Abort()
			if errs.Is(err, errs.Corrupt) {
				d.reportCorrupt(info)
			}
			return nil, err
		}
		pos += n
		if err := p.wait(ctx, len(cr.Data)); err != nil {
			w.Abort()
			return nil, err
		}
		if err := w.Send(cr.Data, cr.CRCs, pos == info.Length); err != nil {
			return nil, d.transferFailed(name, targets[0].Id, w, err)
		}
		if pos == info.Length {
			break
		}
	}
	ack, err := w.Finish()
	if err != nil {
		return nil, d.transferFailed(name, targets[0].Id, w, err)
	}
	if ack.Length != uint64(info.Length) || ack.Crc32C != info.CRC {
		return nil, errs.Newf(errs.Corrupt, op, name, "target acknowledged different bytes than were sent")
	}
	return ack.StoredOn, nil
}

func (d *Datanode) transferFailed(name, first string, w *blockstream.Writer, err error) error {
	bad := first
	if w != nil {
		if b := w.BadNode(); b != "" {
			bad = b
		}
	}
	return &errs.Error{Kind: errs.Unavailable, Op: "TransferBlock", Path: name, Msg: "target datanode " + bad + " failed", Err: err}
}
