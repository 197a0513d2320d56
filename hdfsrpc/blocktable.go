package hdfsrpc

import "github.com/blockfs/blockfs/api"

// FileFinder finds the file a block belongs to, for the writer's calls
// that name only a block (updateBlockForPipeline, updatePipeline).
type FileFinder interface {
	// FileOfBlock returns the path and inode id of the file holding
	// blockID, from this namenode's applied state; ok is false when no
	// file holds it. It must be safe for concurrent use.
	FileOfBlock(blockID uint64) (path string, inode uint64, ok bool)
	// FileBlocks returns the path and blocks (id, generation stamp and
	// length as recorded) of file inode; ok is false when there is no
	// such file. It must be safe for concurrent use.
	FileBlocks(inode uint64) (path string, blocks []*api.Block, ok bool)
}
