package fsm

import (
	"encoding/binary"
	"io"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// reservations are the id ranges ReserveIds took that PutFile may still
// use: the i-th file of a range gets inode firstInode+i and block
// firstBlock+i, and its bit in used, once set, is never cleared. A range
// is dropped once its expiry has passed (by the commands' own clock, so
// every replica drops alike) or all its ids are used; an id of a dropped
// range is refused, so no PutFile can make a second file with one id,
// not even after the first file was deleted. Ranges are in the order
// taken, which is the order of their first ids.
type reservations struct {
	rs []reservation
}

type reservation struct {
	firstInode, firstBlock, genStamp, count uint64
	expMs                                   int64
	used                                    []uint64 // bitmap, count bits
	left                                    uint64   // ids not used yet
}

// maxReserved bounds the ranges held: a leader takes one per
// namenode.reserveBatch files, so this is far more than any token
// lifetime's worth.
const maxReserved = 1 << 16

func (r *reservations) prune(now int64) {
	rs := r.rs[:0]
	for _, x := range r.rs {
		if x.expMs >= now && x.left > 0 {
			rs = append(rs, x)
		}
	}
	clear(r.rs[len(rs):])
	r.rs = rs
}

// find checks that the file of block blockID (and inode inode) may be
// made now and returns the function that marks its ids used, or says why
// it may not be (Precondition). It changes nothing.
func (r *reservations) find(op, path string, inode, blockID, genStamp uint64, now int64) (func(), error) {
	for i := range r.rs {
		x := &r.rs[i]
		if blockID < x.firstBlock || blockID-x.firstBlock >= x.count || x.expMs < now {
			continue
		}
		off := blockID - x.firstBlock
		switch {
		case inode != x.firstInode+off || genStamp != x.genStamp:
			return nil, errs.Newf(errs.Precondition, op, path, "inode %d and block %d_%d were not reserved together", inode, blockID, genStamp)
		case x.used[off/64]&(1<<(off%64)) != 0:
			return nil, errs.Newf(errs.Precondition, op, path, "block %d was already used for a file; prepare the file again", blockID)
		}
		return func() { x.used[off/64] |= 1 << (off % 64); x.left-- }, nil
	}
	return nil, errs.Newf(errs.Precondition, op, path, "block %d is in no live reservation (never reserved, or its reservation expired); prepare the file again", blockID)
}

// CheckReserved is PutFile's check of its ids, as of nowMs and this
// node's state, before the replicas are waited for and the command
// proposed: a PutFile replayed, or of a reservation gone, is refused at
// once. A retry of a call c already applied passes, for the retry cache
// to answer it. The apply checks again.
func (f *FSM) CheckReserved(c *api.Caller, op, path string, inode, blockID, genStamp uint64, nowMs int64) error {
	defer f.mu.RLock().RUnlock()
	if key, named := keyOf(c); named {
		if _, done := f.st.retries.get(key); done {
			return nil
		}
	}
	_, err := f.st.reserved.find(op, path, inode, blockID, genStamp, nowMs)
	return err
}

// maxReserveLife bounds a range's life: a proposer (any member namenode,
// forwarding) cannot keep ids reserved for longer.
const maxReserveLife = 24 * 60 * 60 * 1000 // ms

func (f *FSM) applyReserveIds(c *api.ReserveIdsCommand) (*api.CommandResult, error) {
	const op = "ReserveIds"
	if c.ExpiresUnixMs <= c.MtimeUnixMs || c.ExpiresUnixMs-c.MtimeUnixMs > maxReserveLife {
		return nil, errs.Newf(errs.Invalid, op, "", "reservation from %d to %d ms: want a life of 1 ms to 24 h", c.MtimeUnixMs, c.ExpiresUnixMs)
	}
	f.st.reserved.prune(c.MtimeUnixMs)
	if len(f.st.reserved.rs) >= maxReserved {
		return nil, errs.Newf(errs.Exhausted, op, "", "%d id reservations are live, the most allowed", maxReserved)
	}
	ino, blk, gs, err := f.st.tree.Reserve(c.Count)
	if err != nil {
		return nil, errs.WithOp(err, op)
	}
	f.st.reserved.rs = append(f.st.reserved.rs, reservation{firstInode: uint64(ino), firstBlock: blk, genStamp: gs, count: c.Count,
		expMs: c.ExpiresUnixMs, used: make([]uint64, (c.Count+63)/64), left: c.Count})
	return &api.CommandResult{Reserved: &api.Reserved{FirstInode: uint64(ino), FirstBlock: blk, GenStamp: gs, Count: c.Count}}, nil
}

// applyPutFile is the Create, AddBlock and Complete of a one-block file
// in one apply: the reservation is checked first and marked used last, so
// a refused PutFile changes nothing.
func (f *FSM) applyPutFile(c *api.PutFileCommand) (*api.CommandResult, error) {
	const op = "PutFile"
	cc, b := c.GetCreate(), c.GetBlock()
	if cc == nil || b == nil || b.Crc32C == nil {
		return nil, errs.New(errs.Invalid, op, cc.GetPath(), "command lacks its create, its block or the block's CRC32C")
	}
	s, p, err := f.asPath(cc.Caller, op, cc.Path)
	if err != nil {
		return nil, err
	}
	if cc.MtimeUnixMs > c.TokenExpiresUnixMs {
		return nil, errs.New(errs.Permission, op, cc.Path, "the file's write token expired before the file was put; prepare the file again")
	}
	f.st.reserved.prune(cc.MtimeUnixMs)
	use, err := f.st.reserved.find(op, cc.Path, c.InodeId, b.Id, b.GenStamp, cc.MtimeUnixMs)
	if err != nil {
		return nil, err
	}
	nb := FromAPIBlock(b)
	fi, removed, err := s.PutFile(p, namespace.CreateOpts{
		Perm: cc.Perm, Overwrite: cc.Overwrite, CreateParent: cc.CreateParent,
		Replication: cc.Replication, BlockSize: cc.BlockSize, MtimeMs: cc.MtimeUnixMs,
		UnderConstruction: func(fi namespace.FileInfo) error {
			return f.checkTakeover(cc.Caller, op, cc.Path, fi.ID, fi.Writer, cc.MtimeUnixMs, cc.SoftLimitMs)
		},
	}, namespace.ID(c.InodeId), nb)
	if err != nil {
		return nil, err
	}
	use()
	f.forget(removed)
	if len(removed) > 0 {
		f.pruneLeases()
	}
	if f.events != nil {
		f.events.Expect(nb, fi.ID, fi.Replication, true)
	}
	return &api.CommandResult{Status: ToFileStatus(fi)}, nil
}

// writeTo encodes the ranges: count uvarint, then per range first inode,
// first block, generation stamp and count as uvarints, expiry as int64 LE
// and the used bitmap as (count+63)/64 uint64 LE (docs/FORMATS.md).
func (r *reservations) writeTo(w io.Writer) error {
	b := binary.AppendUvarint(nil, uint64(len(r.rs)))
	for _, x := range r.rs {
		for _, v := range []uint64{x.firstInode, x.firstBlock, x.genStamp, x.count} {
			b = binary.AppendUvarint(b, v)
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(x.expMs))
		for _, u := range x.used {
			b = binary.LittleEndian.AppendUint64(b, u)
		}
	}
	_, err := w.Write(b)
	return err
}

// readReservations decodes writeTo's encoding.
func readReservations(r io.ByteReader) (*reservations, error) {
	const op = "fsm.readReservations"
	n, err := binary.ReadUvarint(r)
	if err != nil || n > maxReserved {
		return nil, errs.Newf(errs.Corrupt, op, "", "bad range count %d (%v)", n, err)
	}
	out := &reservations{}
	u64 := func() uint64 {
		var b [8]byte
		for i := range b {
			if b[i], err = r.ReadByte(); err != nil {
				return 0
			}
		}
		return binary.LittleEndian.Uint64(b[:])
	}
	for range n {
		var v [4]uint64
		for i := range v {
			if v[i], err = binary.ReadUvarint(r); err != nil {
				return nil, errs.Wrap(errs.Corrupt, op, "", err)
			}
		}
		if v[3] == 0 || v[3] > namespace.MaxReserve {
			return nil, errs.Newf(errs.Corrupt, op, "", "range of %d ids", v[3])
		}
		x := reservation{firstInode: v[0], firstBlock: v[1], genStamp: v[2], count: v[3], expMs: int64(u64()), used: make([]uint64, (v[3]+63)/64)}
		for i := range x.used {
			x.used[i] = u64()
		}
		if err != nil {
			return nil, errs.Wrap(errs.Corrupt, op, "", err)
		}
		x.left = x.count
		for i := uint64(0); i < x.count; i++ {
			if x.used[i/64]&(1<<(i%64)) != 0 {
				x.left--
			}
		}
		out.rs = append(out.rs, x)
	}
	return out, nil
}
