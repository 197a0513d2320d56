package namenode

import (
	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namespace"
)

func fromAPIBlock(b *api.Block) namespace.Block {
	if b == nil {
		return namespace.Block{}
	}
	out := namespace.Block{ID: b.Id, GenStamp: b.GenStamp, Length: b.Length}
	if b.Crc32C != nil {
		out = out.WithCRC(*b.Crc32C)
	}
	return out
}

func toAPIBlock(b namespace.Block) *api.Block {
	out := &api.Block{Id: b.ID, GenStamp: b.GenStamp, Length: b.Length}
	if b.HasCRC {
		out.Crc32C = &b.CRC
	}
	return out
}

// packCRC is a block's entry in GetBlockLocationsResponse.crc32cs: 0 for
// none, else 2^32 + the CRC.
func packCRC(b namespace.Block) uint64 {
	if !b.HasCRC {
		return 0
	}
	return 1<<32 | uint64(b.CRC)
}

func toFileStatus(fi namespace.FileInfo) *api.FileStatus {
	return &api.FileStatus{
		Path:              fi.Path,
		InodeId:           uint64(fi.ID),
		IsDir:             fi.IsDir,
		Length:            fi.Length,
		Mode:              fi.Mode,
		Owner:             fi.Owner,
		Group:             fi.Group,
		MtimeUnixMs:       fi.MtimeMs,
		Replication:       fi.Replication,
		BlockSize:         fi.BlockSize,
		Children:          uint64(fi.Children),
		UnderConstruction: !fi.IsDir && fi.State == namespace.UnderConstruction,
		Blocks:            uint64(fi.NumBlocks),
	}
}
