package hdfsrpc

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
)

// HDFS snapshots: the client service's namespace snapshots of
// snapshottable directories, read under <dir>/.snapshot/<name>.

func allowSnapshot(d *Door, ctx context.Context, req *hdfs.AllowSnapshotRequestProto) (proto.Message, error) {
	if _, err := d.cfg.Service.AllowSnapshot(ctx, &api.AllowSnapshotRequest{Path: req.GetSnapshotRoot()}); err != nil {
		return nil, err
	}
	return &hdfs.AllowSnapshotResponseProto{}, nil
}

func disallowSnapshot(d *Door, ctx context.Context, req *hdfs.DisallowSnapshotRequestProto) (proto.Message, error) {
	if _, err := d.cfg.Service.DisallowSnapshot(ctx, &api.DisallowSnapshotRequest{Path: req.GetSnapshotRoot()}); err != nil {
		return nil, err
	}
	return &hdfs.DisallowSnapshotResponseProto{}, nil
}

func createSnapshot(d *Door, ctx context.Context, req *hdfs.CreateSnapshotRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.CreateSnapshot(ctx, &api.CreateSnapshotRequest{Path: req.GetSnapshotRoot(), Name: req.GetSnapshotName()})
	if err != nil {
		return nil, err
	}
	return &hdfs.CreateSnapshotResponseProto{SnapshotPath: proto.String(r.SnapshotPath)}, nil
}

func deleteSnapshot(d *Door, ctx context.Context, req *hdfs.DeleteSnapshotRequestProto) (proto.Message, error) {
	if _, err := d.cfg.Service.DeleteSnapshot(ctx, &api.DeleteSnapshotRequest{Path: req.GetSnapshotRoot(), Name: req.GetSnapshotName()}); err != nil {
		return nil, err
	}
	return &hdfs.DeleteSnapshotResponseProto{}, nil
}

func renameSnapshot(d *Door, ctx context.Context, req *hdfs.RenameSnapshotRequestProto) (proto.Message, error) {
	if _, err := d.cfg.Service.RenameSnapshot(ctx, &api.RenameSnapshotRequest{
		Path: req.GetSnapshotRoot(), OldName: req.GetSnapshotOldName(), NewName: req.GetSnapshotNewName(),
	}); err != nil {
		return nil, err
	}
	return &hdfs.RenameSnapshotResponseProto{}, nil
}

func getSnapshottableDirListing(d *Door, ctx context.Context, _ *hdfs.GetSnapshottableDirListingRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetSnapshottableDirListing(ctx, &api.GetSnapshottableDirListingRequest{})
	if err != nil {
		return nil, err
	}
	if len(r.Dirs) == 0 {
		return &hdfs.GetSnapshottableDirListingResponseProto{}, nil // HDFS answers null for none
	}
	list := &hdfs.SnapshottableDirectoryListingProto{}
	for _, s := range r.Dirs {
		list.SnapshottableDirListing = append(list.SnapshottableDirListing, &hdfs.SnapshottableDirectoryStatusProto{
			DirStatus: status(s.Status, localName(s.Status.Path)), SnapshotQuota: proto.Uint32(s.SnapshotLimit),
			SnapshotNumber: proto.Uint32(s.SnapshotCount), ParentFullpath: []byte(s.ParentPath),
		})
	}
	return &hdfs.GetSnapshottableDirListingResponseProto{SnapshottableDirList: list}, nil
}
