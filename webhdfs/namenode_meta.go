package webhdfs

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/crc32c"
	"github.com/blockfs/blockfs/trash"
)

// The metadata ops: each calls the client service method of its RPC.

func jsonAnswer(v any) (answer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return answer{}, errs.Wrap(errs.Internal, "webhdfs.NamenodeDoor", "", err)
	}
	return answer{status: http.StatusOK, body: b}, nil
}

func boolAnswer(b bool) (answer, error) { return jsonAnswer(BooleanJSON{Boolean: b}) }

func (d *NamenodeDoor) getFileStatus(ctx context.Context, req *request) (answer, error) {
	r, err := d.svc.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.path})
	if err != nil {
		return answer{}, err
	}
	return jsonAnswer(FileStatusJSON{FileStatus: ToFileStatus(r.Status, "")})
}

// listPage is one ListStatus page as WebHDFS FileStatus objects; a file
// listed by itself has an empty pathSuffix.
func (d *NamenodeDoor) listPage(ctx context.Context, p, after string) ([]FileStatus, bool, error) {
	r, err := d.svc.ListStatus(ctx, &api.ListStatusRequest{Path: p, StartAfter: after})
	if err != nil {
		return nil, false, err
	}
	out := make([]FileStatus, len(r.Entries))
	for i, e := range r.Entries {
		suffix := BaseName(e.Path)
		if e.Path == p {
			suffix = ""
		}
		out[i] = ToFileStatus(e, suffix)
	}
	return out, r.HasMore && len(r.Entries) > 0, nil
}

func (d *NamenodeDoor) listStatus(ctx context.Context, req *request) (answer, error) {
	var all []FileStatus
	after := ""
	for {
		page, more, err := d.listPage(ctx, req.path, after)
		if err != nil {
			return answer{}, err
		}
		all = append(all, page...)
		if !more {
			break
		}
		after = page[len(page)-1].PathSuffix
	}
	if all == nil {
		all = []FileStatus{}
	}
	return jsonAnswer(FileStatusesJSON{FileStatuses: FileStatuses{FileStatus: all}})
}

func (d *NamenodeDoor) listStatusBatch(ctx context.Context, req *request) (answer, error) {
	page, more, err := d.listPage(ctx, req.path, req.q.String("startafter"))
	if err != nil {
		return answer{}, err
	}
	var out DirectoryListingJSON
	if page == nil {
		page = []FileStatus{}
	}
	out.DirectoryListing.PartialListing.FileStatuses.FileStatus = page
	if more {
		out.DirectoryListing.RemainingEntries = 1
	}
	return jsonAnswer(out)
}

// contentSummary answers HDFS's ContentSummary, which the namenode
// counts in one walk as the caller (r and x on every directory, as HDFS's
// getContentSummary checks); a quota that is not set is -1.
func (d *NamenodeDoor) contentSummary(ctx context.Context, req *request) (answer, error) {
	r, err := d.svc.GetContentSummary(ctx, &api.GetContentSummaryRequest{Path: req.path})
	if err != nil {
		return answer{}, err
	}
	s := r.Summary
	return jsonAnswer(ContentSummaryJSON{ContentSummary: ContentSummary{
		DirectoryCount: s.DirectoryCount, FileCount: s.FileCount, Length: s.Length,
		Quota: s.Quota, SpaceConsumed: s.SpaceConsumed, SpaceQuota: s.SpaceQuota, TypeQuota: map[string]any{},
	}})
}

// quotaUsage answers HDFS's QuotaUsage (from the directory's counters
// when it has a quota).
func (d *NamenodeDoor) quotaUsage(ctx context.Context, req *request) (answer, error) {
	r, err := d.svc.GetQuotaUsage(ctx, &api.GetQuotaUsageRequest{Path: req.path})
	if err != nil {
		return answer{}, err
	}
	u := r.Usage
	return jsonAnswer(QuotaUsageJSON{QuotaUsage: QuotaUsage{
		FileAndDirectoryCount: u.FileAndDirectoryCount, Quota: u.Quota,
		SpaceConsumed: u.SpaceConsumed, SpaceQuota: u.SpaceQuota, TypeQuota: map[string]any{},
	}})
}

// setQuota is HDFS 3's SETQUOTA: namespacequota and storagespacequota,
// each absent meaning Long.MAX_VALUE (QUOTA_DONT_SET) and -1 clearing it
// (QUOTA_RESET), as Hadoop's NameSpaceQuotaParam and
// StorageSpaceQuotaParam default. The namenode refuses a caller who is
// not a superuser (AccessControlException).
func (d *NamenodeDoor) setQuota(ctx context.Context, req *request) (answer, error) {
	ns, err := req.q.Int("namespacequota", math.MaxInt64, -1, math.MaxInt64)
	if err != nil {
		return answer{}, err
	}
	ds, err := req.q.Int("storagespacequota", math.MaxInt64, -1, math.MaxInt64)
	if err != nil {
		return answer{}, err
	}
	if _, err := d.svc.SetQuota(ctx, &api.SetQuotaRequest{Path: req.path, NamespaceQuota: ns, SpaceQuota: ds}); err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK}, nil
}

// rangeParams reads offset and length; ok is false when length is given.
func rangeParams(q Query) (off, length uint64, whole bool, err error) {
	if off, err = q.Uint("offset", 0); err != nil {
		return 0, 0, false, err
	}
	whole = !q.Has("length") || q.String("length") == ""
	if length, err = q.Uint("length", 0); err != nil {
		return 0, 0, false, err
	}
	return off, length, whole, nil
}

// blockLocations answers GETFILEBLOCKLOCATIONS: Hadoop's BlockLocations.
func (d *NamenodeDoor) blockLocations(ctx context.Context, req *request) (answer, error) {
	return d.locations(ctx, req, BlockLocations)
}

// locatedBlocks answers GET_BLOCK_LOCATIONS: Hadoop's LocatedBlocks.
func (d *NamenodeDoor) locatedBlocks(ctx context.Context, req *request) (answer, error) {
	return d.locations(ctx, req, func(r *api.GetBlockLocationsResponse) ([]byte, error) {
		return LocatedBlocks(r, d.cfg.BlockPool)
	})
}

// locations answers the locations of the requested range, encoded.
func (d *NamenodeDoor) locations(ctx context.Context, req *request, encode func(*api.GetBlockLocationsResponse) ([]byte, error)) (answer, error) {
	off, length, whole, err := rangeParams(req.q)
	if err != nil {
		return answer{}, err
	}
	r, err := d.svc.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: req.path, Offset: off, Length: length})
	if err != nil {
		return answer{}, err
	}
	if !whole && length == 0 { // the RPC's 0 means "to the end"; here it is an empty range
		r.BlockIds, r.GenStamps, r.Lengths, r.ReplicaCounts, r.ReplicaIndexes = nil, nil, nil, nil, nil
	}
	b, err := encode(r)
	if err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK, body: b}, nil
}

// checksum answers GETFILECHECKSUM at once, from the block CRCs the
// namespace recorded (no byte is read, so no datanode is involved, where
// HDFS redirects to one): COMPOSITE-CRC32C, as `dfs checksum` prints it.
func (d *NamenodeDoor) checksum(ctx context.Context, req *request) (answer, error) {
	const op = "GetBlockLocations"
	r, err := d.svc.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: req.path})
	if err != nil {
		return answer{}, err
	}
	if r.UnderConstruction {
		return answer{}, errs.New(errs.Precondition, op, req.path, "the file is open for writing and has no checksum yet")
	}
	if len(r.Crc32Cs) != len(r.BlockIds) || len(r.Lengths) != len(r.BlockIds) {
		return answer{}, errs.New(errs.Precondition, op, req.path, "a block of the file has no recorded CRC32C")
	}
	var crc uint32
	var total uint64
	for i, v := range r.Crc32Cs {
		if v>>32 != 1 {
			return answer{}, errs.New(errs.Precondition, op, req.path, "a block of the file has no recorded CRC32C")
		}
		if r.Lengths[i] > math.MaxUint64-total {
			return answer{}, errs.New(errs.Internal, op, req.path, "block lengths pass 2^64")
		}
		crc = crc32c.Combine(crc, uint32(v), r.Lengths[i])
		total += r.Lengths[i]
	}
	var out FileChecksumJSON
	var be [4]byte
	binary.BigEndian.PutUint32(be[:], crc)
	out.FileChecksum.Algorithm, out.FileChecksum.Bytes, out.FileChecksum.Length = "COMPOSITE-CRC32C", hex.EncodeToString(be[:]), len(be)
	return jsonAnswer(out)
}

// homeDirectory answers GETHOMEDIRECTORY: /user/<name>, as HDFS does.
func (d *NamenodeDoor) homeDirectory(_ context.Context, req *request) (answer, error) {
	return jsonAnswer(PathJSON{Path: "/user/" + req.user})
}

// trashRoot answers GETTRASHROOT: /user/<name>/.Trash, as HDFS does for a
// path outside an encryption zone (package trash).
func (d *NamenodeDoor) trashRoot(_ context.Context, req *request) (answer, error) {
	return jsonAnswer(PathJSON{Path: trash.Root(req.user)})
}

func (d *NamenodeDoor) mkdirs(ctx context.Context, req *request) (answer, error) {
	perm, err := req.q.Permission("permission", 0o755)
	if err != nil {
		return answer{}, err
	}
	if _, err := d.svc.Mkdirs(ctx, &api.MkdirsRequest{Path: req.path, Mode: perm, Parents: true}); err != nil {
		return answer{}, err
	}
	return boolAnswer(true)
}

// rename answers false, as HDFS's rename does, when the source does
// not exist or the destination does; every other failure is an exception.
func (d *NamenodeDoor) rename(ctx context.Context, req *request) (answer, error) {
	if req.q.String("destination") == "" {
		return answer{}, Errorf(IllegalArgument, `Invalid value for webhdfs parameter "destination": missing`)
	}
	dst, err := CheckPath(req.q.String("destination"))
	if err != nil {
		return answer{}, err
	}
	_, err = d.svc.Rename(ctx, &api.RenameRequest{Src: req.path, Dst: dst})
	switch errs.KindOf(err) {
	case errs.NotFound, errs.Exist:
		return boolAnswer(false)
	}
	if err != nil {
		return answer{}, err
	}
	return boolAnswer(true)
}

// delete answers false when the path does not exist, as HDFS does.
func (d *NamenodeDoor) delete(ctx context.Context, req *request) (answer, error) {
	rec, err := req.q.Bool("recursive", false)
	if err != nil {
		return answer{}, err
	}
	_, err = d.svc.Delete(ctx, &api.DeleteRequest{Path: req.path, Recursive: rec})
	if errs.KindOf(err) == errs.NotFound {
		return boolAnswer(false)
	}
	if err != nil {
		return answer{}, err
	}
	return boolAnswer(true)
}

func (d *NamenodeDoor) setPermission(ctx context.Context, req *request) (answer, error) {
	perm, err := req.q.Permission("permission", 0o755)
	if err != nil {
		return answer{}, err
	}
	if _, err := d.svc.SetPermission(ctx, &api.SetPermissionRequest{Path: req.path, Mode: perm}); err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK}, nil
}

func (d *NamenodeDoor) setOwner(ctx context.Context, req *request) (answer, error) {
	owner, group := req.q.String("owner"), req.q.String("group")
	if owner == "" && group == "" {
		return answer{}, Errorf(IllegalArgument, "SETOWNER needs owner or group")
	}
	if _, err := d.svc.SetOwner(ctx, &api.SetOwnerRequest{Path: req.path, Owner: owner, Group: group}); err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK}, nil
}
