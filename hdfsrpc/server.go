package hdfsrpc

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
)

func getServerDefaults(d *Door, _ context.Context, _ *hdfs.GetServerDefaultsRequestProto) (proto.Message, error) {
	df := d.cfg.Defaults
	return &hdfs.GetServerDefaultsResponseProto{ServerDefaults: &hdfs.FsServerDefaultsProto{
		BlockSize: proto.Uint64(df.BlockSize), BytesPerChecksum: proto.Uint32(df.BytesPerChecksum),
		WritePacketSize: proto.Uint32(df.WritePacketSize), Replication: proto.Uint32(df.Replication),
		FileBufferSize: proto.Uint32(df.FileBufferSize), EncryptDataTransfer: proto.Bool(false),
		TrashInterval: proto.Uint64(uint64(df.TrashInterval.Minutes())), ChecksumType: hdfs.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(),
	}}, nil
}

// getFsStats: capacity and use summed over the live datanodes the
// namenode knows.
func getFsStats(d *Door, ctx context.Context, _ *hdfs.GetFsStatusRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.ClusterStatus(ctx, &api.ClusterStatusRequest{})
	if err != nil {
		return nil, err
	}
	var capacity, used uint64
	for _, dn := range r.Datanodes {
		if dn.State == "live" {
			capacity += dn.Capacity
			used += dn.Used
		}
	}
	return &hdfs.GetFsStatsResponseProto{
		Capacity: proto.Uint64(capacity), Used: proto.Uint64(used), Remaining: proto.Uint64(capacity - min(used, capacity)),
		UnderReplicated: proto.Uint64(0), CorruptBlocks: proto.Uint64(0), MissingBlocks: proto.Uint64(0),
	}, nil
}

// getDataEncryptionKey: none, as an HDFS namenode without
// dfs.encrypt.data.transfer answers.
func getDataEncryptionKey(*Door, context.Context, *hdfs.GetDataEncryptionKeyRequestProto) (proto.Message, error) {
	return &hdfs.GetDataEncryptionKeyResponseProto{}, nil
}
