package fsm

import (
	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namespace"
)

// FromAPIBlock converts a wire block to the namespace's.
func FromAPIBlock(b *api.Block) namespace.Block {
	if b == nil {
		return namespace.Block{}
	}
	out := namespace.Block{ID: b.Id, GenStamp: b.GenStamp, Length: b.Length}
	if b.Crc32C != nil {
		out = out.WithCRC(*b.Crc32C)
	}
	return out
}

// ToAPIBlock converts a namespace block to the wire's.
func ToAPIBlock(b namespace.Block) *api.Block {
	out := &api.Block{Id: b.ID, GenStamp: b.GenStamp, Length: b.Length}
	if b.HasCRC {
		out.Crc32C = &b.CRC
	}
	return out
}

// ToFileStatus converts a namespace FileInfo to the wire's FileStatus.
func ToFileStatus(fi namespace.FileInfo) *api.FileStatus {
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
		AtimeUnixMs:       fi.AtimeMs,
	}
}
