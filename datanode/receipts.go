package datanode

import (
	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

// setReceiptKey keeps the receipt key a registration answer carries; an
// answer without one (an older namenode) leaves none, and receipts for
// that namenode stop.
func (a *actor) setReceiptKey(resp *api.RegisterResponse) {
	k, err := security.ReceiptKeyFrom(resp.GetReceiptKeyId(), resp.GetReceiptKey())
	if err != nil {
		a.receipt.Store(nil)
		return
	}
	a.receipt.Store(k)
}

// receipts appends to dst this datanode's receipts of the committed
// replica info, one under each namenode's key (security's
// ReplicaFacts): the writer hands them to Complete, whose leader then
// counts the replica without waiting for this datanode's report.
func (d *Datanode) receipts(info lbm.BlockInfo, dst []*api.Receipt) []*api.Receipt {
	f := security.ReplicaFacts{Datanode: d.id, BlockID: info.ID, GenStamp: info.GenStamp, Length: uint64(info.Length), Inode: info.Inode, CRC: info.CRC}
	for _, a := range d.actors {
		if k := a.receipt.Load(); k != nil {
			dst = append(dst, &api.Receipt{DatanodeId: d.id, KeyId: k.ID, Mac: k.Sign(f)})
		}
	}
	return dst
}
