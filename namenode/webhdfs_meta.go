package namenode

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/crc32c"
	"github.com/blockfs/blockfs/webhdfs"
)

// The metadata ops: each calls the clientService method of its RPC.

func jsonAnswer(v any) (webAnswer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return webAnswer{}, errs.Wrap(errs.Internal, "webhdfs", "", err)
	}
	return webAnswer{status: http.StatusOK, body: b}, nil
}

func boolAnswer(b bool) (webAnswer, error) { return jsonAnswer(webhdfs.BooleanJSON{Boolean: b}) }

func (s *clientService) webGetFileStatus(ctx context.Context, req *webReq) (webAnswer, error) {
	r, err := s.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.path})
	if err != nil {
		return webAnswer{}, err
	}
	return jsonAnswer(webhdfs.FileStatusJSON{FileStatus: webhdfs.ToFileStatus(r.Status, "")})
}

// listPage is one ListStatus page as WebHDFS FileStatus objects; a file
// listed by itself has an empty pathSuffix.
func (s *clientService) listPage(ctx context.Context, p, after string) ([]webhdfs.FileStatus, bool, error) {
	r, err := s.ListStatus(ctx, &api.ListStatusRequest{Path: p, StartAfter: after})
	if err != nil {
		return nil, false, err
	}
	out := make([]webhdfs.FileStatus, len(r.Entries))
	for i, e := range r.Entries {
		suffix := webhdfs.BaseName(e.Path)
		if e.Path == p {
			suffix = ""
		}
		out[i] = webhdfs.ToFileStatus(e, suffix)
	}
	return out, r.HasMore && len(r.Entries) > 0, nil
}

func (s *clientService) webListStatus(ctx context.Context, req *webReq) (webAnswer, error) {
	var all []webhdfs.FileStatus
	after := ""
	for {
		page, more, err := s.listPage(ctx, req.path, after)
		if err != nil {
			return webAnswer{}, err
		}
		all = append(all, page...)
		if !more {
			break
		}
		after = page[len(page)-1].PathSuffix
	}
	if all == nil {
		all = []webhdfs.FileStatus{}
	}
	return jsonAnswer(webhdfs.FileStatusesJSON{FileStatuses: webhdfs.FileStatuses{FileStatus: all}})
}

func (s *clientService) webListStatusBatch(ctx context.Context, req *webReq) (webAnswer, error) {
	page, more, err := s.listPage(ctx, req.path, req.q.String("startafter"))
	if err != nil {
		return webAnswer{}, err
	}
	var out webhdfs.DirectoryListingJSON
	if page == nil {
		page = []webhdfs.FileStatus{}
	}
	out.DirectoryListing.PartialListing.FileStatuses.FileStatus = page
	if more {
		out.DirectoryListing.RemainingEntries = 1
	}
	return jsonAnswer(out)
}

// webContentSummary walks the tree under the path page by page as the
// caller, so it needs what listing every directory needs (r and x on
// each, as HDFS's getContentSummary).
func (s *clientService) webContentSummary(ctx context.Context, req *webReq) (webAnswer, error) {
	st, err := s.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.path})
	if err != nil {
		return webAnswer{}, err
	}
	cs := webhdfs.ContentSummary{Quota: -1, SpaceQuota: -1, TypeQuota: map[string]any{}}
	add := func(f *api.FileStatus) {
		if f.IsDir {
			cs.DirectoryCount++
			return
		}
		cs.FileCount++
		cs.Length += f.Length
		cs.SpaceConsumed += f.Length * uint64(f.Replication)
	}
	add(st.Status)
	dirs := []string{}
	if st.Status.IsDir {
		dirs = append(dirs, req.path)
	}
	for len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		after := ""
		for {
			r, err := s.ListStatus(ctx, &api.ListStatusRequest{Path: d, StartAfter: after})
			if err != nil {
				return webAnswer{}, err
			}
			for _, e := range r.Entries {
				add(e)
				if e.IsDir {
					dirs = append(dirs, e.Path)
				}
			}
			if !r.HasMore || len(r.Entries) == 0 {
				break
			}
			after = webhdfs.BaseName(r.Entries[len(r.Entries)-1].Path)
		}
	}
	return jsonAnswer(webhdfs.ContentSummaryJSON{ContentSummary: cs})
}

// rangeParams reads offset and length; ok is false when length is given.
func rangeParams(q webhdfs.Query) (off, length uint64, whole bool, err error) {
	if off, err = q.Uint("offset", 0); err != nil {
		return 0, 0, false, err
	}
	whole = !q.Has("length") || q.String("length") == ""
	if length, err = q.Uint("length", 0); err != nil {
		return 0, 0, false, err
	}
	return off, length, whole, nil
}

func (s *clientService) webBlockLocations(ctx context.Context, req *webReq) (webAnswer, error) {
	off, length, whole, err := rangeParams(req.q)
	if err != nil {
		return webAnswer{}, err
	}
	r, err := s.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: req.path, Offset: off, Length: length})
	if err != nil {
		return webAnswer{}, err
	}
	if !whole && length == 0 { // the RPC's 0 means "to the end"; here it is an empty range
		r.BlockIds, r.GenStamps, r.Lengths, r.ReplicaCounts, r.ReplicaIndexes = nil, nil, nil, nil, nil
	}
	var b []byte
	if req.op.Name == "GETFILEBLOCKLOCATIONS" {
		b, err = webhdfs.BlockLocations(r)
	} else {
		b, err = webhdfs.LocatedBlocks(r, "BP-"+s.n.cfg.TrustDomain)
	}
	if err != nil {
		return webAnswer{}, err
	}
	return webAnswer{status: http.StatusOK, body: b}, nil
}

// webChecksum answers GETFILECHECKSUM at once, from the block CRCs the
// namespace recorded (no byte is read, so no datanode is involved, where
// HDFS redirects to one): COMPOSITE-CRC32C, as `dfs checksum` prints it.
func (s *clientService) webChecksum(ctx context.Context, req *webReq) (webAnswer, error) {
	const op = "checksum"
	r, err := s.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: req.path})
	if err != nil {
		return webAnswer{}, err
	}
	if r.UnderConstruction {
		return webAnswer{}, errs.New(errs.Precondition, op, req.path, "the file is open for writing and has no checksum yet")
	}
	if len(r.Crc32Cs) != len(r.BlockIds) || len(r.Lengths) != len(r.BlockIds) {
		return webAnswer{}, errs.New(errs.Precondition, op, req.path, "a block of the file has no recorded CRC32C")
	}
	var crc uint32
	var total uint64
	for i, v := range r.Crc32Cs {
		if v>>32 != 1 {
			return webAnswer{}, errs.New(errs.Precondition, op, req.path, "a block of the file has no recorded CRC32C")
		}
		if r.Lengths[i] > math.MaxUint64-total {
			return webAnswer{}, errs.New(errs.Internal, op, req.path, "block lengths pass 2^64")
		}
		crc = crc32c.Combine(crc, uint32(v), r.Lengths[i])
		total += r.Lengths[i]
	}
	var out webhdfs.FileChecksumJSON
	var be [4]byte
	binary.BigEndian.PutUint32(be[:], crc)
	out.FileChecksum.Algorithm, out.FileChecksum.Bytes, out.FileChecksum.Length = "COMPOSITE-CRC32C", hex.EncodeToString(be[:]), len(be)
	return jsonAnswer(out)
}

func (s *clientService) webMkdirs(ctx context.Context, req *webReq) (webAnswer, error) {
	perm, err := req.q.Permission("permission", 0o755)
	if err != nil {
		return webAnswer{}, err
	}
	if _, err := s.Mkdirs(ctx, &api.MkdirsRequest{Path: req.path, Mode: perm, Parents: true}); err != nil {
		return webAnswer{}, err
	}
	return boolAnswer(true)
}

// webRename answers false, as HDFS's rename does, when the source does
// not exist or the destination does; every other failure is an exception.
func (s *clientService) webRename(ctx context.Context, req *webReq) (webAnswer, error) {
	if req.q.String("destination") == "" {
		return webAnswer{}, webhdfs.Errorf(webhdfs.IllegalArgument, `Invalid value for webhdfs parameter "destination": missing`)
	}
	dst, err := webhdfs.CheckPath(req.q.String("destination"))
	if err != nil {
		return webAnswer{}, err
	}
	_, err = s.Rename(ctx, &api.RenameRequest{Src: req.path, Dst: dst})
	switch errs.KindOf(err) {
	case errs.NotFound, errs.Exist:
		return boolAnswer(false)
	}
	if err != nil {
		return webAnswer{}, err
	}
	return boolAnswer(true)
}

// webDelete answers false when the path does not exist, as HDFS does.
func (s *clientService) webDelete(ctx context.Context, req *webReq) (webAnswer, error) {
	rec, err := req.q.Bool("recursive", false)
	if err != nil {
		return webAnswer{}, err
	}
	_, err = s.Delete(ctx, &api.DeleteRequest{Path: req.path, Recursive: rec})
	if errs.KindOf(err) == errs.NotFound {
		return boolAnswer(false)
	}
	if err != nil {
		return webAnswer{}, err
	}
	return boolAnswer(true)
}

func (s *clientService) webSetPermission(ctx context.Context, req *webReq) (webAnswer, error) {
	perm, err := req.q.Permission("permission", 0o755)
	if err != nil {
		return webAnswer{}, err
	}
	if _, err := s.SetPermission(ctx, &api.SetPermissionRequest{Path: req.path, Mode: perm}); err != nil {
		return webAnswer{}, err
	}
	return webAnswer{status: http.StatusOK}, nil
}

func (s *clientService) webSetOwner(ctx context.Context, req *webReq) (webAnswer, error) {
	owner, group := req.q.String("owner"), req.q.String("group")
	if owner == "" && group == "" {
		return webAnswer{}, webhdfs.Errorf(webhdfs.IllegalArgument, "SETOWNER needs owner or group")
	}
	if _, err := s.SetOwner(ctx, &api.SetOwnerRequest{Path: req.path, Owner: owner, Group: group}); err != nil {
		return webAnswer{}, err
	}
	return webAnswer{status: http.StatusOK}, nil
}
