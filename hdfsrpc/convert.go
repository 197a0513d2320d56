package hdfsrpc

import (
	"net"
	"path"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hadoopcommon "github.com/blockfs/blockfs/api/hadoop/common"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
)

// BlockTokenKind is the kind of the TokenProto a block token travels in.
const BlockTokenKind = "HDFS_BLOCK_TOKEN"

// status converts a blockfs FileStatus to HDFS's, named by its local name
// (getFileInfo sends an empty name, a listing each entry's).
func status(fs *api.FileStatus, name string) *hdfs.HdfsFileStatusProto {
	t := hdfs.HdfsFileStatusProto_IS_FILE
	children := int32(0)
	if fs.IsDir {
		t = hdfs.HdfsFileStatusProto_IS_DIR
		children = int32(min(fs.Children, 1<<31-1))
	}
	mtime := uint64(max(fs.MtimeUnixMs, 0))
	return &hdfs.HdfsFileStatusProto{
		FileType:         t.Enum(),
		Path:             []byte(name),
		Length:           proto.Uint64(fs.Length),
		Permission:       &hdfs.FsPermissionProto{Perm: proto.Uint32(fs.Mode & 0o1777)},
		Owner:            proto.String(fs.Owner),
		Group:            proto.String(fs.Group),
		ModificationTime: proto.Uint64(mtime),
		AccessTime:       proto.Uint64(accessTime(fs, mtime)),
		BlockReplication: proto.Uint32(fs.Replication),
		Blocksize:        proto.Uint64(fs.BlockSize),
		FileId:           proto.Uint64(fs.InodeId),
		ChildrenNum:      proto.Int32(children),
	}
}

// localName is the last component of p ("" for the root).
func localName(p string) string {
	if p == "/" || p == "" {
		return ""
	}
	return path.Base(p)
}

// extended is a blockfs block as HDFS names it.
func (d *Door) extended(b *api.Block) *hdfs.ExtendedBlockProto {
	return &hdfs.ExtendedBlockProto{
		PoolId: proto.String(d.cfg.BlockPool), BlockId: proto.Uint64(b.GetId()),
		GenerationStamp: proto.Uint64(b.GetGenStamp()), NumBytes: proto.Uint64(b.GetLength()),
	}
}

// block is an HDFS block as blockfs names it (nil for nil).
func block(b *hdfs.ExtendedBlockProto) *api.Block {
	if b == nil {
		return nil
	}
	return &api.Block{Id: b.GetBlockId(), GenStamp: b.GetGenerationStamp(), Length: b.GetNumBytes()}
}

// token wraps blockfs's signed token bytes as a Hadoop block token.
func token(t []byte) *hadoopcommon.TokenProto {
	return &hadoopcommon.TokenProto{
		Identifier: t, Password: []byte{}, Kind: proto.String(BlockTokenKind), Service: proto.String(""),
	}
}

// datanode converts a datanode as the client service lists it; its
// xferPort is its DataTransferProtocol door's, and its hostName and
// ipcPort its gRPC address's, where the door of the pipeline's first
// datanode forwards a write to the others (docs/FORMATS.md, "HDFS data
// transfer").
func (d *Door) datanode(dn *api.DatanodeInfo) *hdfs.DatanodeInfoProto {
	data := d.cfg.DataAddr(dn)
	host, xfer := splitHostPort(data)
	grpcHost, ipc := splitHostPort(dn.Addr)
	if host == "" {
		host = grpcHost
	}
	_, info := splitHostPort(dn.HttpAddr)
	remaining := uint64(0)
	if dn.Capacity > dn.Used {
		remaining = dn.Capacity - dn.Used
	}
	return &hdfs.DatanodeInfoProto{
		Id: &hdfs.DatanodeIDProto{
			IpAddr: proto.String(host), HostName: proto.String(grpcHost), DatanodeUuid: proto.String(dn.Id),
			XferPort: proto.Uint32(xfer), InfoPort: proto.Uint32(info), IpcPort: proto.Uint32(ipc),
		},
		Capacity: proto.Uint64(dn.Capacity), DfsUsed: proto.Uint64(dn.Used), Remaining: proto.Uint64(remaining),
		LastUpdate: proto.Uint64(uint64(max(dn.LastHeartbeatUnixMs, 0))),
		Location:   proto.String(rackOrDefault(dn.Rack)),
		AdminState: adminState(dn.AdminState).Enum(),
	}
}

// replica is a datanode as located blocks name it: its address, uuid,
// rack and admin state, without the capacity and use figures (optional
// fields a client reading or writing a block has no use for: a
// 1000-block answer would carry them 3,000 times). An admin state of
// NORMAL is left out: it is the field's declared default, so a decoder
// reads the same value either way.
func (d *Door) replica(dn *api.DatanodeInfo) *hdfs.DatanodeInfoProto {
	out := d.datanode(dn)
	out.Capacity, out.DfsUsed, out.Remaining, out.LastUpdate = nil, nil, nil, nil
	if out.GetAdminState() == hdfs.DatanodeInfoProto_NORMAL {
		out.AdminState = nil
	}
	return out
}

func rackOrDefault(r string) string {
	if r == "" {
		return "/default-rack"
	}
	return r
}

func adminState(s string) hdfs.DatanodeInfoProto_AdminState {
	switch s {
	case "DECOMMISSION_INPROGRESS":
		return hdfs.DatanodeInfoProto_DECOMMISSION_INPROGRESS
	case "DECOMMISSIONED":
		return hdfs.DatanodeInfoProto_DECOMMISSIONED
	case "ENTERING_MAINTENANCE":
		return hdfs.DatanodeInfoProto_ENTERING_MAINTENANCE
	case "IN_MAINTENANCE":
		return hdfs.DatanodeInfoProto_IN_MAINTENANCE
	}
	return hdfs.DatanodeInfoProto_NORMAL
}

func splitHostPort(a string) (string, uint32) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0
	}
	n, _ := strconv.ParseUint(p, 10, 16)
	return h, uint32(n)
}

// located converts a block with its pipeline or replicas (AddBlock,
// Append, UpdateBlockForPipeline).
func (d *Door) located(lb *api.LocatedBlock, tok []byte) *hdfs.LocatedBlockProto {
	if len(lb.Token) > 0 {
		tok = lb.Token
	}
	out := &hdfs.LocatedBlockProto{
		B: d.extended(lb.Block), Offset: proto.Uint64(lb.Offset), Corrupt: proto.Bool(lb.Corrupt),
		BlockToken: token(tok),
	}
	for _, dn := range lb.Locations {
		out.Locs = append(out.Locs, d.replica(dn))
		out.IsCached = append(out.IsCached, false)
		out.StorageTypes = append(out.StorageTypes, hdfs.StorageTypeProto_DISK)
		out.StorageIDs = append(out.StorageIDs, "DS-"+dn.Id)
	}
	return out
}

// accessTime is a status's access time (its modification time when it
// has none recorded).
func accessTime(fs *api.FileStatus, mtime uint64) uint64 {
	if fs.AtimeUnixMs > 0 {
		return uint64(fs.AtimeUnixMs)
	}
	return mtime
}
