package decommission

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCollector: the admin-state gauge counts datanodes per state, and
// the decommission gauges what the leaving ones wait for.
func TestCollector(t *testing.T) {
	x := newFixture(t, "")
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(x.m))
	if _, err := x.s.Decommission(context.Background(), "user/root", []string{"dn1"}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP blockfs_datanodes_admin_state Registered datanodes by admin state.
# TYPE blockfs_datanodes_admin_state gauge
blockfs_datanodes_admin_state{state="DECOMMISSIONED"} 0
blockfs_datanodes_admin_state{state="DECOMMISSION_INPROGRESS"} 1
blockfs_datanodes_admin_state{state="ENTERING_MAINTENANCE"} 0
blockfs_datanodes_admin_state{state="IN_MAINTENANCE"} 0
blockfs_datanodes_admin_state{state="NORMAL"} 4
# HELP blockfs_decommission_blocks_left Blocks that datanodes decommissioning or entering maintenance still wait to have copied.
# TYPE blockfs_decommission_blocks_left gauge
blockfs_decommission_blocks_left 6
# HELP blockfs_decommission_bytes_left Bytes of those blocks.
# TYPE blockfs_decommission_bytes_left gauge
blockfs_decommission_bytes_left 6.291456e+06
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
