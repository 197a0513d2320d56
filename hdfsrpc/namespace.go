package hdfsrpc

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
)

// listingPage is how many entries one getListing answers (HDFS's
// dfs.ls.limit default).
const listingPage = 1000

// getFileInfo: a missing path is an empty reply, not an exception, as
// HDFS answers it.
func getFileInfo(d *Door, ctx context.Context, req *hdfs.GetFileInfoRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.GetSrc()})
	if errs.Is(err, errs.NotFound) {
		return &hdfs.GetFileInfoResponseProto{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &hdfs.GetFileInfoResponseProto{Fs: status(r.Status, "")}, nil
}

// getFileLinkInfo: blockfs has no symlinks, so it is getFileInfo.
func getFileLinkInfo(d *Door, ctx context.Context, req *hdfs.GetFileLinkInfoRequestProto) (proto.Message, error) {
	r, err := getFileInfo(d, ctx, &hdfs.GetFileInfoRequestProto{Src: req.Src})
	if err != nil {
		return nil, err
	}
	return &hdfs.GetFileLinkInfoResponseProto{Fs: r.(*hdfs.GetFileInfoResponseProto).Fs}, nil
}

// getListing: one page after startAfter; a file lists as itself and a
// missing path is an empty reply, as HDFS answers them.
func getListing(d *Door, ctx context.Context, req *hdfs.GetListingRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.ListStatus(ctx, &api.ListStatusRequest{
		Path: req.GetSrc(), StartAfter: string(req.GetStartAfter()), Limit: listingPage,
	})
	if errs.Is(err, errs.NotFound) {
		return &hdfs.GetListingResponseProto{}, nil
	}
	if errs.Is(err, errs.NotDir) {
		fi, ferr := d.cfg.Service.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.GetSrc()})
		if ferr != nil {
			return nil, ferr
		}
		return &hdfs.GetListingResponseProto{DirList: &hdfs.DirectoryListingProto{
			PartialListing: []*hdfs.HdfsFileStatusProto{status(fi.Status, "")}, RemainingEntries: proto.Uint32(0),
		}}, nil
	}
	if err != nil {
		return nil, err
	}
	list := &hdfs.DirectoryListingProto{
		PartialListing:   make([]*hdfs.HdfsFileStatusProto, len(r.Entries)),
		RemainingEntries: proto.Uint32(0),
	}
	for i, e := range r.Entries {
		list.PartialListing[i] = status(e, localName(e.Path))
	}
	if r.HasMore {
		// blockfs knows there are more, not how many; any non-zero count
		// makes a client ask for the next page.
		list.RemainingEntries = proto.Uint32(1)
	}
	return &hdfs.GetListingResponseProto{DirList: list}, nil
}

func mkdirs(d *Door, ctx context.Context, req *hdfs.MkdirsRequestProto) (proto.Message, error) {
	_, err := d.cfg.Service.Mkdirs(ctx, &api.MkdirsRequest{
		Path: req.GetSrc(), Mode: perm(req.GetMasked(), 0o755), Parents: req.GetCreateParent(),
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.MkdirsResponseProto{Result: proto.Bool(true)}, nil
}

// perm is a request's permission, def when absent (blockfs takes 0 as
// its default, so an explicit 0 becomes 0o000 only through SetPermission).
func perm(p *hdfs.FsPermissionProto, def uint32) uint32 {
	if p == nil || p.GetPerm()&0o1777 == 0 {
		return def
	}
	return p.GetPerm() & 0o1777
}

// deletePath: false, not an exception, for a missing path.
func deletePath(d *Door, ctx context.Context, req *hdfs.DeleteRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.Delete(ctx, &api.DeleteRequest{Path: req.GetSrc(), Recursive: req.GetRecursive()})
	if errs.Is(err, errs.NotFound) {
		return &hdfs.DeleteResponseProto{Result: proto.Bool(false)}, nil
	}
	if err != nil {
		return nil, err
	}
	return &hdfs.DeleteResponseProto{Result: proto.Bool(r.Deleted)}, nil
}

// rename is HDFS's old rename: into an existing directory, and false
// rather than an exception when it cannot be done.
func rename(d *Door, ctx context.Context, req *hdfs.RenameRequestProto) (proto.Message, error) {
	_, err := d.cfg.Service.Rename(ctx, &api.RenameRequest{Src: req.GetSrc(), Dst: req.GetDst()})
	switch errs.KindOf(err) {
	case errs.Other:
		if err == nil {
			return &hdfs.RenameResponseProto{Result: proto.Bool(true)}, nil
		}
	case errs.NotFound, errs.Exist, errs.NotDir, errs.Invalid:
		return &hdfs.RenameResponseProto{Result: proto.Bool(false)}, nil
	}
	return nil, err
}

// rename2 names the destination itself and may replace it.
func rename2(d *Door, ctx context.Context, req *hdfs.Rename2RequestProto) (proto.Message, error) {
	_, err := d.cfg.Service.Rename(ctx, &api.RenameRequest{
		Src: req.GetSrc(), Dst: req.GetDst(), Exact: true, Overwrite: req.GetOverwriteDest(),
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.Rename2ResponseProto{}, nil
}

func setPermission(d *Door, ctx context.Context, req *hdfs.SetPermissionRequestProto) (proto.Message, error) {
	_, err := d.cfg.Service.SetPermission(ctx, &api.SetPermissionRequest{
		Path: req.GetSrc(), Mode: req.GetPermission().GetPerm() & 0o1777,
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.SetPermissionResponseProto{}, nil
}

func setOwner(d *Door, ctx context.Context, req *hdfs.SetOwnerRequestProto) (proto.Message, error) {
	_, err := d.cfg.Service.SetOwner(ctx, &api.SetOwnerRequest{
		Path: req.GetSrc(), Owner: req.GetUsername(), Group: req.GetGroupname(),
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.SetOwnerResponseProto{}, nil
}

func getContentSummary(d *Door, ctx context.Context, req *hdfs.GetContentSummaryRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetContentSummary(ctx, &api.GetContentSummaryRequest{Path: req.GetPath()})
	if err != nil {
		return nil, err
	}
	s := r.Summary
	return &hdfs.GetContentSummaryResponseProto{Summary: &hdfs.ContentSummaryProto{
		Length: u64(s.Length), FileCount: u64(s.FileCount), DirectoryCount: u64(s.DirectoryCount),
		Quota: quota(s.Quota), SpaceConsumed: u64(s.SpaceConsumed), SpaceQuota: quota(s.SpaceQuota),
	}}, nil
}

func getQuotaUsage(d *Door, ctx context.Context, req *hdfs.GetQuotaUsageRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetQuotaUsage(ctx, &api.GetQuotaUsageRequest{Path: req.GetPath()})
	if err != nil {
		return nil, err
	}
	u := r.Usage
	return &hdfs.GetQuotaUsageResponseProto{Usage: &hdfs.QuotaUsageProto{
		FileAndDirectoryCount: u64(u.FileAndDirectoryCount), Quota: quota(u.Quota),
		SpaceConsumed: u64(u.SpaceConsumed), SpaceQuota: quota(u.SpaceQuota),
	}}, nil
}

// setQuota: HDFS's QUOTA_DONT_SET (Long.MAX_VALUE) leaves a quota as it
// is and QUOTA_RESET (-1) clears it; blockfs's SetQuota takes the same
// two values (see api.SetQuotaRequest).
func setQuota(d *Door, ctx context.Context, req *hdfs.SetQuotaRequestProto) (proto.Message, error) {
	if req.StorageType != nil {
		return nil, errs.New(errs.Invalid, "setQuota", req.GetPath(), "quotas by storage type are not supported: blockfs has one storage type")
	}
	_, err := d.cfg.Service.SetQuota(ctx, &api.SetQuotaRequest{
		Path: req.GetPath(), NamespaceQuota: int64(req.GetNamespaceQuota()), SpaceQuota: int64(req.GetStoragespaceQuota()),
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.SetQuotaResponseProto{}, nil
}

func isFileClosed(d *Door, ctx context.Context, req *hdfs.IsFileClosedRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.GetSrc()})
	if err != nil {
		return nil, err
	}
	return &hdfs.IsFileClosedResponseProto{Result: proto.Bool(!r.Status.UnderConstruction)}, nil
}

func getPreferredBlockSize(d *Door, ctx context.Context, req *hdfs.GetPreferredBlockSizeRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.GetFilename()})
	if err != nil {
		return nil, err
	}
	return &hdfs.GetPreferredBlockSizeResponseProto{Bsize: proto.Uint64(r.Status.BlockSize)}, nil
}

func u64(v int64) *uint64 { return proto.Uint64(uint64(max(v, 0))) }

// quota is a quota as HDFS sends it: -1 for none.
func quota(v int64) *uint64 {
	if v <= 0 {
		return proto.Uint64(^uint64(0))
	}
	return proto.Uint64(uint64(v))
}
