package webhdfs

import (
	"context"
	"net/http"
	"path"

	"github.com/blockfs/blockfs/api"
)

// The HDFS snapshot ops on the namenode: ALLOWSNAPSHOT, DISALLOWSNAPSHOT,
// CREATESNAPSHOT (snapshotname=, answered {"Path": ...}), RENAMESNAPSHOT
// (oldsnapshotname=, snapshotname=), DELETESNAPSHOT (snapshotname=) and
// GETSNAPSHOTTABLEDIRECTORYLIST, as Hadoop's WebHDFS names them. The
// snapshots' files are read with the other ops under <dir>/.snapshot/<name>.

func (d *NamenodeDoor) allowSnapshot(ctx context.Context, req *request) (answer, error) {
	if _, err := d.svc.AllowSnapshot(ctx, &api.AllowSnapshotRequest{Path: req.path}); err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK}, nil
}

func (d *NamenodeDoor) disallowSnapshot(ctx context.Context, req *request) (answer, error) {
	if _, err := d.svc.DisallowSnapshot(ctx, &api.DisallowSnapshotRequest{Path: req.path}); err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK}, nil
}

// createSnapshot answers the snapshot's path; without snapshotname the
// namenode names it "s" and the time, as HDFS does.
func (d *NamenodeDoor) createSnapshot(ctx context.Context, req *request) (answer, error) {
	r, err := d.svc.CreateSnapshot(ctx, &api.CreateSnapshotRequest{Path: req.path, Name: req.q.String("snapshotname")})
	if err != nil {
		return answer{}, err
	}
	return jsonAnswer(PathJSON{Path: r.SnapshotPath})
}

func (d *NamenodeDoor) renameSnapshot(ctx context.Context, req *request) (answer, error) {
	_, err := d.svc.RenameSnapshot(ctx, &api.RenameSnapshotRequest{Path: req.path,
		OldName: req.q.String("oldsnapshotname"), NewName: req.q.String("snapshotname")})
	if err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK}, nil
}

func (d *NamenodeDoor) deleteSnapshot(ctx context.Context, req *request) (answer, error) {
	if _, err := d.svc.DeleteSnapshot(ctx, &api.DeleteSnapshotRequest{Path: req.path, Name: req.q.String("snapshotname")}); err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK}, nil
}

// SnapshottableDirJSON is one entry of GETSNAPSHOTTABLEDIRECTORYLIST.
type SnapshottableDirJSON struct {
	DirStatus      FileStatus `json:"dirStatus"`
	ParentFullPath string     `json:"parentFullPath"`
	SnapshotNumber uint32     `json:"snapshotNumber"`
	SnapshotQuota  uint32     `json:"snapshotQuota"`
}

// SnapshottableDirListJSON is the GETSNAPSHOTTABLEDIRECTORYLIST answer.
type SnapshottableDirListJSON struct {
	List []SnapshottableDirJSON `json:"SnapshottableDirectoryList"`
}

// snapshottableDirs lists the snapshottable directories the user owns (a
// superuser: all).
func (d *NamenodeDoor) snapshottableDirs(ctx context.Context, _ *request) (answer, error) {
	r, err := d.svc.GetSnapshottableDirListing(ctx, &api.GetSnapshottableDirListingRequest{})
	if err != nil {
		return answer{}, err
	}
	out := SnapshottableDirListJSON{List: make([]SnapshottableDirJSON, len(r.Dirs))}
	for i, s := range r.Dirs {
		out.List[i] = SnapshottableDirJSON{DirStatus: ToFileStatus(s.Status, path.Base(s.Status.Path)),
			ParentFullPath: s.ParentPath, SnapshotNumber: s.SnapshotCount, SnapshotQuota: s.SnapshotLimit}
	}
	return jsonAnswer(out)
}
