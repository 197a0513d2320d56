package namenode

import (
	"time"

	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/namenode/safemode"
)

// updateSafeMode feeds the block map's counts to safe mode and reports
// whether the namenode is (still) in it. The work loop calls it on the
// leader before planning any replication or deletion.
func (n *Namenode) updateSafeMode() bool {
	safe, total := n.blocks.SafeBlocks()
	live := 0
	for _, d := range n.blocks.Datanodes() {
		if d.State == blocks.Live {
			live++
		}
	}
	if n.safe.Update(safemode.Counts{Safe: safe, Total: total, Datanodes: live}, time.Now()) {
		n.log.Info("left safe mode", "safe_blocks", safe, "total_blocks", total, "live_datanodes", live)
	}
	return n.safe.On()
}

// SafeMode returns this namenode's safe mode as of its last update.
func (n *Namenode) SafeMode() safemode.Status { return n.safe.Status(time.Now()) }
