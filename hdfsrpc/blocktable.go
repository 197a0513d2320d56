package hdfsrpc

import (
	"sync"

	"github.com/blockfs/blockfs/api"
)

// FileFinder finds the file a block belongs to, for the writer's calls
// that name only a block (updateBlockForPipeline, updatePipeline).
type FileFinder interface {
	// FileOfBlock returns the path and inode id of the file holding
	// blockID, from this namenode's applied state; ok is false when no
	// file holds it. It must be safe for concurrent use.
	FileOfBlock(blockID uint64) (path string, inode uint64, ok bool)
}

// blockTable remembers the file of each block this door handed a writer
// (addBlock, append) until the file is completed, so that the writer's
// pipeline calls find it without a lookup. It is bounded: past maxBlocks
// it is cleared and Config.Files answers.
type blockTable struct {
	mu sync.Mutex
	m  map[uint64]blockFile
}

type blockFile struct {
	path  string
	inode uint64
}

const maxBlocks = 1 << 16

func (t *blockTable) put(id uint64, p string, inode uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxBlocks {
		t.m = make(map[uint64]blockFile)
	}
	t.m[id] = blockFile{p, inode}
}

func (t *blockTable) get(id uint64) (string, uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.m[id]
	return f.path, f.inode, ok
}

func (t *blockTable) forget(bs []*api.Block) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range bs {
		delete(t.m, b.Id)
	}
}
