package namenode

import (
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
)

// TestForwardedAdminStateRefused: a member namenode cannot forward an
// admin-state command through Apply: only the leader proposes one, after
// its block map's checks (decommissioning more than the cluster can lose).
func TestForwardedAdminStateRefused(t *testing.T) {
	c := fsm.AdminStateCommand([]*api.AdminStateEntry{{DatanodeId: "dn1", State: api.AdminState_ADMIN_DECOMMISSIONED}}, nil, "namenode/nn2", time.Now())
	data, err := fsm.Encode(fsm.CmdSetAdminState, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forwardedCommand(data, "nn2"); !errs.Is(err, errs.Permission) {
		t.Fatalf("forwarded admin state: %v", err)
	}
}
