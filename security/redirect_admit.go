package security

import (
	"math"

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
	if m, p, ok := writeCall(req); ok {
		if !writes || method != m {
			return deny("not a CREATE or APPEND")
		}
		path = p
		if p == "" {
			// RenewLease names no path: it renews the leases of the
			// datanode's client, which writes only this token's file.
			path = r.Path
		}
	} else {
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
		case *api.GetBlockLocationsRequest:
			if r.Op != RedirectOpen || method != api.ClientService_GetBlockLocations_FullMethodName {
				return deny("not an OPEN")
			}
			if !r.covers(q.Offset, q.Length) {
				return deny("a range outside the token's")
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
	}
	if path != r.Path {
		return deny("another path")
	}
	return nil
}

// covers reports whether the read of [off, off+n) (n 0: to the end of the
// file) lies within the OPEN's signed range, so that a datanode holding a
// token for a few bytes gets the block tokens of those bytes' blocks only,
// never the whole file's.
func (r Redirect) covers(off, n uint64) bool {
	if off < r.Offset {
		return false
	}
	if !r.HasLength || r.Length > math.MaxUint64-r.Offset {
		return true // to the end of the file
	}
	end := r.Offset + r.Length
	return off < end && n != 0 && n <= end-off
}

// writeCall gives the method a write's call of type req belongs to and the
// path it names ("" for RenewLease), or ok false for any other request.
// Append is one: a CREATE's token admits it too, since Hadoop's clients
// (fsspec) send the rest of a file they CREATEd as APPENDs to the CREATE's
// datanode URL.
func writeCall(req any) (method, path string, ok bool) {
	switch q := req.(type) {
	case *api.AddBlockRequest:
		return api.ClientService_AddBlock_FullMethodName, q.Path, true
	case *api.CompleteRequest:
		return api.ClientService_Complete_FullMethodName, q.Path, true
	case *api.AbandonBlockRequest:
		return api.ClientService_AbandonBlock_FullMethodName, q.Path, true
	case *api.AppendRequest:
		return api.ClientService_Append_FullMethodName, q.Path, true
	case *api.FsyncRequest:
		return api.ClientService_Fsync_FullMethodName, q.Path, true
	case *api.UpdateBlockForPipelineRequest:
		return api.ClientService_UpdateBlockForPipeline_FullMethodName, q.Path, true
	case *api.UpdatePipelineRequest:
		return api.ClientService_UpdatePipeline_FullMethodName, q.Path, true
	case *api.RenewLeaseRequest:
		return api.ClientService_RenewLease_FullMethodName, "", true
	}
	return "", "", false
}
