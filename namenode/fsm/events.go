package fsm

import (
	"slices"

	"github.com/blockfs/blockfs/namespace"
)

// BlockEvents is told about block changes the FSM applies, so the block
// map (soft state, outside Raft) knows which blocks exist. Its methods are
// called with the FSM's write lock held: they must not call back into the
// FSM, and should be quick.
type BlockEvents interface {
	// Expect says a block exists with this replication; complete once its
	// file is complete.
	Expect(b namespace.Block, inode namespace.ID, replication uint32, complete bool)
	// Forget says the blocks are gone (deleted, overwritten or abandoned).
	Forget(bs []namespace.Block)
}

// PipelineRecorder is a BlockEvents that also learns the datanodes chosen
// to write a new block (AddBlockCommand.targets, UpdatePipelineCommand).
type PipelineRecorder interface {
	Pipeline(b namespace.Block, datanodes []string)
}

// ExpectedResetter is a BlockEvents that can replace its whole expected
// set at once (Restore). Without it, Restore calls Expect for every block.
type ExpectedResetter interface {
	// ResetExpected makes the expected blocks exactly those that each
	// yields (about n of them); the rest are forgotten.
	ResetExpected(n int, each func(fn func(b namespace.Block, inode namespace.ID, repl uint32, complete bool)))
}

// resetBlockEvents tells the block map the blocks of a restored state.
// With f.mu held.
func (f *FSM) resetBlockEvents(st *state) {
	if f.events == nil {
		return
	}
	if r, ok := f.events.(ExpectedResetter); ok {
		_, _, n := st.tree.Counts()
		r.ResetExpected(n, st.tree.ForEachBlock)
		return
	}
	st.tree.ForEachBlock(func(b namespace.Block, inode namespace.ID, repl uint32, complete bool) {
		f.events.Expect(b, inode, repl, complete)
	})
}

// forget tells the block map that bs are gone, except those a namespace
// snapshot still lists (hsnap.go): their replicas stay until the last
// snapshot holding them is deleted.
func (f *FSM) forget(bs []namespace.Block) {
	if bs = f.unheld(bs); f.events != nil && len(bs) > 0 {
		f.events.Forget(bs)
	}
}

// unheld returns bs without the blocks a namespace snapshot lists (bs
// itself when there are none; else a new slice).
func (f *FSM) unheld(bs []namespace.Block) []namespace.Block {
	tree := f.st.tree
	if !slices.ContainsFunc(bs, func(b namespace.Block) bool { return tree.HeldBySnapshot(b.ID) }) {
		return bs
	}
	return slices.DeleteFunc(slices.Clone(bs), func(b namespace.Block) bool { return tree.HeldBySnapshot(b.ID) })
}

// pipeline tells a PipelineRecorder the datanodes writing b.
func (f *FSM) pipeline(b namespace.Block, datanodes []string) {
	if p, ok := f.events.(PipelineRecorder); ok {
		p.Pipeline(b, datanodes)
	}
}
