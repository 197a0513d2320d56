package hdfsrpc

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
)

func getServerDefaults(d *Door, ctx context.Context, _ *hdfs.GetServerDefaultsRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetServerDefaults(ctx, &api.GetServerDefaultsRequest{})
	if err != nil {
		return nil, err
	}
	df := r.Defaults
	return &hdfs.GetServerDefaultsResponseProto{ServerDefaults: &hdfs.FsServerDefaultsProto{
		BlockSize: proto.Uint64(df.BlockSize), BytesPerChecksum: proto.Uint32(df.BytesPerChecksum),
		WritePacketSize: proto.Uint32(df.WritePacketSize), Replication: proto.Uint32(df.Replication),
		FileBufferSize: proto.Uint32(df.FileBufferSize), EncryptDataTransfer: proto.Bool(df.EncryptDataTransfer),
		TrashInterval: proto.Uint64(uint64(max(df.TrashIntervalMs, 0) / 60000)),
		ChecksumType:  hdfs.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(),
	}}, nil
}

func getFsStats(d *Door, ctx context.Context, _ *hdfs.GetFsStatusRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetFsStats(ctx, &api.GetFsStatsRequest{})
	if err != nil {
		return nil, err
	}
	return &hdfs.GetFsStatsResponseProto{
		Capacity: proto.Uint64(r.Capacity), Used: proto.Uint64(r.Used), Remaining: proto.Uint64(r.Remaining),
		UnderReplicated: proto.Uint64(r.UnderReplicated), CorruptBlocks: proto.Uint64(r.CorruptBlocks),
		MissingBlocks: proto.Uint64(r.MissingBlocks), MissingReplOneBlocks: proto.Uint64(r.MissingReplOneBlocks),
		PendingDeletionBlocks: proto.Uint64(r.PendingDeletionBlocks),
	}, nil
}

// getDataEncryptionKey: none, as an HDFS namenode without
// dfs.encrypt.data.transfer answers.
func getDataEncryptionKey(*Door, context.Context, *hdfs.GetDataEncryptionKeyRequestProto) (proto.Message, error) {
	return &hdfs.GetDataEncryptionKeyResponseProto{}, nil
}
