package locreply

import (
	"sync"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/namespace"
)

// Zeroed returns n zeros in s's array if it has room, else in a new one.
func Zeroed(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// DatanodeInfo describes d as replies list it.
func DatanodeInfo(d blocks.Datanode) *api.DatanodeInfo {
	e := new(api.DatanodeInfo)
	FillDatanodeInfo(e, &d)
	return e
}

// FillDatanodeInfo sets e to describe d.
func FillDatanodeInfo(e *api.DatanodeInfo, d *blocks.Datanode) {
	state := "live"
	if d.State == blocks.Dead {
		state = "dead"
	}
	*e = api.DatanodeInfo{
		Id: d.ID, Addr: d.Addr, HttpAddr: d.HTTPAddr, HdfsDataAddr: d.HDFSDataAddr, Rack: d.Rack, Capacity: d.Capacity, Used: d.Used,
		State: state, LastHeartbeatUnixMs: d.LastHeartbeat.UnixMilli(), FailedVolumes: d.FailedVolumes,
	}
	if d.Admin.State != blocks.AdminNormal { // "" is NORMAL: no bytes on the hot path
		e.AdminState = d.Admin.State.HDFS()
	}
}

// Scratch is one request's replica reader and datanode table, recycled
// through scratches.
type Scratch struct {
	// nc is the reader's namespace caller: the session keeps a pointer to
	// it, and one on the stack would escape (namespace.Session's errors
	// carry its op), costing an allocation a call.
	NC namespace.Caller
	RD blocks.LocationReader
	// slot maps a datanode's number (blocks.LocationReader.Append) to 1 +
	// its index in infos, 0 when not yet in this reply; used lists the
	// numbers set, so release clears only those.
	slot  []uint32
	used  []uint32
	Infos []*api.DatanodeInfo
}

var scratches = sync.Pool{New: func() any { return new(Scratch) }}

// GetScratch returns a scratch from the pool; Release returns it.
func GetScratch() *Scratch { return scratches.Get().(*Scratch) }

// Index returns the index of datanode number num in the reply's table,
// adding it on first sight.
func (sc *Scratch) Index(rd *blocks.LocationReader, num uint32) uint32 {
	if int(num) < len(sc.slot) {
		if k := sc.slot[num]; k != 0 {
			return k - 1
		}
	} else {
		sc.slot = append(sc.slot, make([]uint32, int(num)+1-len(sc.slot))...)
	}
	sc.Infos = AppendInfo(sc.Infos, rd.Datanode(num))
	k := uint32(len(sc.Infos))
	sc.slot[num] = k
	sc.used = append(sc.used, num)
	return k - 1
}

// Release clears sc and returns it to the pool. The reply keeps infos (its
// datanode table), so the next request starts from its own reply's.
func (sc *Scratch) Release() {
	for _, num := range sc.used {
		sc.slot[num] = 0
	}
	sc.used, sc.Infos = sc.used[:0], nil
	sc.NC = namespace.Caller{}
	sc.RD.Reset(nil)
	scratches.Put(sc)
}

// PackCRC is a block's entry in GetBlockLocationsResponse.crc32cs: 0 for
// none, else 2^32 + the CRC.
func PackCRC(b namespace.Block) uint64 {
	if !b.HasCRC {
		return 0
	}
	return 1<<32 | uint64(b.CRC)
}
