package webhdfs

import (
	"encoding/json"
	"testing"

	"github.com/blockfs/blockfs/api"
)

// TestDatanodeInfoAdminState: a datanode's adminState is the namenode's,
// in HDFS's names; a datanode without one is NORMAL.
func TestDatanodeInfoAdminState(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "NORMAL"},
		{"DECOMMISSION_INPROGRESS", "DECOMMISSION_INPROGRESS"},
		{"DECOMMISSIONED", "DECOMMISSIONED"},
		{"ENTERING_MAINTENANCE", "ENTERING_MAINTENANCE"},
		{"IN_MAINTENANCE", "IN_MAINTENANCE"},
	} {
		b := datanodeInfo(&api.DatanodeInfo{Id: "dn1", Addr: "127.0.0.1:9866", AdminState: tc.in})
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if v["adminState"] != tc.want {
			t.Fatalf("%q: adminState %v, want %s", tc.in, v["adminState"], tc.want)
		}
	}
}
