package webhdfs

import (
	"math"
	"net"
	"strconv"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// Both block-location answers are written by hand into one buffer: a
// 1000-block file is 3000 replica entries, and reflection-driven
// encoding/json would cost more than the namenode's lookup itself.
// Strings come from the namenode (ids, addresses), are escaped all the
// same, and each datanode's part is encoded once per answer.

// packedBlocks walks a GetBlockLocations reply's packed arrays, checking
// every length and index (a malformed reply is an error of op, the
// exported encoder it serves), and calls fn for each block with its file
// offset and replica datanode-table indexes.
func packedBlocks(op string, r *api.GetBlockLocationsResponse, fn func(i int, off uint64, replicas []uint32)) error {
	n := len(r.BlockIds)
	bad := func(what string) error {
		return errs.Newf(errs.Internal, op, "", "malformed reply: %s", what)
	}
	if len(r.GenStamps) != n || len(r.Lengths) != n || len(r.ReplicaCounts) != n {
		return bad("array lengths differ")
	}
	off, next := r.FirstOffset, 0
	for i := range n {
		c := int(r.ReplicaCounts[i])
		if c > len(r.ReplicaIndexes)-next {
			return bad("replica counts exceed the replica indexes")
		}
		reps := r.ReplicaIndexes[next : next+c]
		for _, x := range reps {
			if int(x) >= len(r.Datanodes) {
				return bad("replica index outside the datanode table")
			}
		}
		if r.Lengths[i] > math.MaxUint64-off {
			return bad("block offsets pass 2^64")
		}
		fn(i, off, reps)
		off += r.Lengths[i]
		next += c
	}
	return nil
}

// host is the host part of a datanode address.
func host(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// BlockLocations encodes the GETFILEBLOCKLOCATIONS answer, Hadoop's
// {"BlockLocations":{"BlockLocation":[...]}}: per block its offset and
// length, the replicas' hosts, names (the data address), topology paths
// (rack/address, the rack as the namenode's topology gives it) and
// storage types.
func BlockLocations(r *api.GetBlockLocationsResponse) ([]byte, error) {
	type dn struct{ host, name, topo []byte }
	dns := make([]dn, len(r.Datanodes))
	for i, d := range r.Datanodes {
		dns[i] = dn{host: appendString(nil, host(d.GetAddr())), name: appendString(nil, d.GetAddr()),
			topo: appendString(nil, d.GetRack()+"/"+d.GetAddr())}
	}
	b := make([]byte, 0, 64+len(r.BlockIds)*(200+3*64))
	b = append(b, `{"BlockLocations":{"BlockLocation":[`...)
	list := func(reps []uint32, part func(dn) []byte) {
		b = append(b, '[')
		for k, x := range reps {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, part(dns[x])...)
		}
		b = append(b, ']')
	}
	err := packedBlocks("webhdfs.BlockLocations", r, func(i int, off uint64, reps []uint32) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"cachedHosts":[],"corrupt":false,"hosts":`...)
		list(reps, func(d dn) []byte { return d.host })
		b = append(b, `,"length":`...)
		b = strconv.AppendUint(b, r.Lengths[i], 10)
		b = append(b, `,"names":`...)
		list(reps, func(d dn) []byte { return d.name })
		b = append(b, `,"offset":`...)
		b = strconv.AppendUint(b, off, 10)
		b = append(b, `,"storageTypes":`...)
		list(reps, func(dn) []byte { return []byte(`"DISK"`) })
		b = append(b, `,"topologyPaths":`...)
		list(reps, func(d dn) []byte { return d.topo })
		b = append(b, '}')
	})
	if err != nil {
		return nil, err
	}
	return append(b, "]}}"...), nil
}

// LocatedBlocks encodes the GET_BLOCK_LOCATIONS answer, Hadoop's
// {"LocatedBlocks":{...}}: the file length, whether it is under
// construction, and per block its id, generation stamp, length, start
// offset and the replicas as Hadoop DatanodeInfo objects. blockToken is
// always empty: blockfs's read tokens are for its gRPC data path and are
// not handed out over HTTP.
func LocatedBlocks(r *api.GetBlockLocationsResponse, blockPool string) ([]byte, error) {
	dns := make([][]byte, len(r.Datanodes))
	for i, d := range r.Datanodes {
		dns[i] = datanodeInfo(d)
	}
	pool := appendString(nil, blockPool)
	var last []byte
	b := make([]byte, 0, 128+len(r.BlockIds)*(256+3*256))
	b = append(b, `{"LocatedBlocks":{"fileLength":`...)
	b = strconv.AppendUint(b, r.FileLength, 10)
	b = append(b, `,"isLastBlockComplete":`...)
	b = strconv.AppendBool(b, !r.UnderConstruction)
	b = append(b, `,"isUnderConstruction":`...)
	b = strconv.AppendBool(b, r.UnderConstruction)
	b = append(b, `,"locatedBlocks":[`...)
	err := packedBlocks("webhdfs.LocatedBlocks", r, func(i int, off uint64, reps []uint32) {
		if i > 0 {
			b = append(b, ',')
		}
		start := len(b)
		b = append(b, `{"block":{"blockId":`...)
		b = strconv.AppendUint(b, r.BlockIds[i], 10)
		b = append(b, `,"blockPoolId":`...)
		b = append(b, pool...)
		b = append(b, `,"generationStamp":`...)
		b = strconv.AppendUint(b, r.GenStamps[i], 10)
		b = append(b, `,"numBytes":`...)
		b = strconv.AppendUint(b, r.Lengths[i], 10)
		b = append(b, `},"blockToken":{"urlString":""},"cachedLocations":[],"isCorrupt":false,"locations":[`...)
		for k, x := range reps {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, dns[x]...)
		}
		b = append(b, `],"startOffset":`...)
		b = strconv.AppendUint(b, off, 10)
		b = append(b, `,"storageTypes":[`...)
		for k := range reps {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `"DISK"`...)
		}
		b = append(b, "]}"...)
		if i == len(r.BlockIds)-1 {
			last = b[start:]
		}
	})
	if err != nil {
		return nil, err
	}
	b = append(b, ']')
	if last != nil {
		b = append(b, `,"lastLocatedBlock":`...)
		b = append(b, last...)
	}
	return append(b, "}}"...), nil
}

// datanodeInfo encodes a datanode as Hadoop's DatanodeInfo JSON object;
// adminState is the namenode's (HDFS's names: NORMAL,
// DECOMMISSION_INPROGRESS, DECOMMISSIONED, ENTERING_MAINTENANCE,
// IN_MAINTENANCE).
func datanodeInfo(d *api.DatanodeInfo) []byte {
	h, p, _ := net.SplitHostPort(d.GetAddr())
	port, _ := strconv.Atoi(p)
	_, ip, _ := net.SplitHostPort(d.GetHttpAddr())
	infoPort, _ := strconv.Atoi(ip)
	admin := d.GetAdminState()
	if admin == "" {
		admin = "NORMAL"
	}
	b := append([]byte(`{"adminState":`), strconv.Quote(admin)...)
	b = append(b, `,"capacity":`...)
	b = strconv.AppendUint(b, d.GetCapacity(), 10)
	b = append(b, `,"datanodeUuid":`...)
	b = appendString(b, d.GetId())
	b = append(b, `,"dfsUsed":`...)
	b = strconv.AppendUint(b, d.GetUsed(), 10)
	b = append(b, `,"hostName":`...)
	b = appendString(b, h)
	b = append(b, `,"infoPort":`...)
	b = strconv.AppendInt(b, int64(infoPort), 10)
	b = append(b, `,"infoSecurePort":0,"ipAddr":`...)
	b = appendString(b, h)
	b = append(b, `,"ipcPort":`...)
	b = strconv.AppendInt(b, int64(port), 10)
	b = append(b, `,"lastUpdate":`...)
	b = strconv.AppendInt(b, d.GetLastHeartbeatUnixMs(), 10)
	b = append(b, `,"networkLocation":`...)
	b = appendString(b, d.GetRack())
	b = append(b, `,"remaining":`...)
	b = strconv.AppendUint(b, d.GetCapacity()-min(d.GetUsed(), d.GetCapacity()), 10)
	b = append(b, `,"xceiverCount":0,"xferPort":`...)
	b = strconv.AppendInt(b, int64(port), 10)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and
// control bytes escaped, and bytes that are not valid UTF-8 passed as
// \u escapes of their byte value, so the document stays valid JSON.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c >= 0x7f:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
