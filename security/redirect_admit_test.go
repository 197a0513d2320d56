package security

import (
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// TestAdmitsWriterCalls: a CREATE's or APPEND's redirect token admits the
// writer's lease and pipeline calls on its own path only; an OPEN's admits
// none of them.
func TestAdmitsWriterCalls(t *testing.T) {
	for _, c := range []struct {
		op     string
		method string
		req    any
		ok     bool
	}{
		{RedirectCreate, api.ClientService_Fsync_FullMethodName, &api.FsyncRequest{Path: "/f"}, true},
		{RedirectAppend, api.ClientService_UpdateBlockForPipeline_FullMethodName, &api.UpdateBlockForPipelineRequest{Path: "/f"}, true},
		{RedirectAppend, api.ClientService_UpdatePipeline_FullMethodName, &api.UpdatePipelineRequest{Path: "/f"}, true},
		{RedirectCreate, api.ClientService_RenewLease_FullMethodName, &api.RenewLeaseRequest{}, true},
		{RedirectCreate, api.ClientService_Fsync_FullMethodName, &api.FsyncRequest{Path: "/other"}, false},
		{RedirectCreate, api.ClientService_UpdatePipeline_FullMethodName, &api.FsyncRequest{Path: "/f"}, false},
		{RedirectOpen, api.ClientService_Fsync_FullMethodName, &api.FsyncRequest{Path: "/f"}, false},
		{RedirectOpen, api.ClientService_RenewLease_FullMethodName, &api.RenewLeaseRequest{}, false},
		{RedirectCreate, api.ClientService_RecoverLease_FullMethodName, &api.RecoverLeaseRequest{Path: "/f"}, false},
	} {
		err := Redirect{Op: c.op, Path: "/f"}.Admits(c.method, c.req)
		if (err == nil) != c.ok || (err != nil && errs.KindOf(err) != errs.Permission) {
			t.Errorf("%s token, %s %T: %v, want admitted=%v", c.op, c.method, c.req, err, c.ok)
		}
	}
}
