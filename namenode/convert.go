package namenode

import (
	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namespace"
)

func fromAPIBlock(b *api.Block) namespace.Block {
	if b == nil {
		return namespace.Block{}
	}
	return namespace.Block{ID: b.Id, GenStamp: b.GenStamp, Length: b.Length}
}

func toAPIBlock(b namespace.Block) *api.Block {
	return &api.Block{Id: b.ID, GenStamp: b.GenStamp, Length: b.Length}
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
