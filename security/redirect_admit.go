package security

import (
	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// Admits reports whether r lets its datanode make the ClientService call
// method with req as r's user: the few calls a CREATE (Create, AddBlock,
// Complete, AbandonBlock, GetFileInfo, and Append for the appends that
// continue it), an APPEND (Append, AddBlock, Complete, AbandonBlock,
// GetFileInfo), either of them the writer's lease and pipeline calls
// (RenewLease, Fsync, UpdateBlockForPipeline, UpdatePipeline), or an OPEN
// (GetBlockLocations,
// GetFileInfo) needs, on r's path only, and a Create only with the
// parameters the namenode fixed in r. Anything else is an errs.Permission
// error.
func (r Redirect) Admits(method string, req any) error {
	deny := func(why string) error {
		return errs.Newf(errs.Permission, method, r.Path, "redirect token for %s of %q does not admit this call: %s", r.Op, r.Path, why)
	}
	var path string
	create := r.Op == RedirectCreate
	writes := create || r.Op == RedirectAppend // the calls of a write after the file is open
	switch q := req.(type) {
	case *api.CreateRequest:
		if !create || method != api.ClientService_Create_FullMethodName {
			return deny("not a CREATE")
		}
		c := r.Create
		if q.Overwrite != c.Overwrite || q.CreateParent != c.CreateParent || q.Mode != c.Perm ||
			q.Replication != c.Replication || q.BlockSize != c.BlockSize {
			return deny("parameters differ from the token's")
		}
		path = q.Path
	case *api.AddBlockRequest:
		if !writes || method != api.ClientService_AddBlock_FullMethodName {
			return deny("not a CREATE or APPEND")
		}
		path = q.Path
	case *api.CompleteRequest:
		if !writes || method != api.ClientService_Complete_FullMethodName {
			return deny("not a CREATE or APPEND")
		}
		path = q.Path
	case *api.AbandonBlockRequest:
		if !writes || method != api.ClientService_AbandonBlock_FullMethodName {
			return deny("not a CREATE or APPEND")
		}
		path = q.Path
	case *api.AppendRequest:
		// A CREATE's token admits Append too: Hadoop's clients (fsspec)
		// send the rest of a file they CREATEd as APPENDs to the CREATE's
		// datanode URL.
		if !writes || method != api.ClientService_Append_FullMethodName {
			return deny("not a CREATE or APPEND")
		}
		path = q.Path
	case *api.FsyncRequest:
		if !writes || method != api.ClientService_Fsync_FullMethodName {
			return deny("not a CREATE or APPEND")
		}
		path = q.Path
	case *api.UpdateBlockForPipelineRequest:
		if !writes || method != api.ClientService_UpdateBlockForPipeline_FullMethodName {
			return deny("not a CREATE or APPEND")
		}
		path = q.Path
	case *api.UpdatePipelineRequest:
		if !writes || method != api.ClientService_UpdatePipeline_FullMethodName {
			return deny("not a CREATE or APPEND")
		}
		path = q.Path
	case *api.RenewLeaseRequest:
		// Names no path: it renews the leases of the datanode's client,
		// which writes only this token's file as this user.
		if !writes || method != api.ClientService_RenewLease_FullMethodName {
			return deny("not a CREATE or APPEND")
		}
		path = r.Path
	case *api.GetBlockLocationsRequest:
		if r.Op != RedirectOpen || method != api.ClientService_GetBlockLocations_FullMethodName {
			return deny("not an OPEN")
		}
		path = q.Path
	case *api.GetFileInfoRequest:
		if method != api.ClientService_GetFileInfo_FullMethodName {
			return deny("unexpected request")
		}
		path = q.Path
	default:
		return deny("not a call of a WebHDFS data step")
	}
	if path != r.Path {
		return deny("another path")
	}
	return nil
}
