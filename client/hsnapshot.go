package client

import (
	"context"

	"github.com/blockfs/blockfs/api"
)

// HDFS snapshots: namespace snapshots of snapshottable directories, read
// under <dir>/.snapshot/<name> with every read call (Stat, List, Open,
// ContentSummary). Not the namenodes' Raft snapshots (Admin.Snapshot).

// AllowSnapshot makes directory p snapshottable (a superuser only).
func (c *Client) AllowSnapshot(ctx context.Context, p string) error {
	return c.call(ctx, "AllowSnapshot", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.AllowSnapshot(ctx, &api.AllowSnapshotRequest{Path: p}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// DisallowSnapshot makes directory p, which has no snapshots, not
// snapshottable (a superuser only).
func (c *Client) DisallowSnapshot(ctx context.Context, p string) error {
	return c.call(ctx, "DisallowSnapshot", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.DisallowSnapshot(ctx, &api.DisallowSnapshotRequest{Path: p}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// CreateSnapshot takes a snapshot of directory p called name ("": the
// namenode names it "s" and the time) and returns its path,
// p/.snapshot/name.
func (c *Client) CreateSnapshot(ctx context.Context, p, name string) (string, error) {
	var out string
	err := c.call(ctx, "CreateSnapshot", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.CreateSnapshot(ctx, &api.CreateSnapshotRequest{Path: p, Name: name}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		out = r.GetSnapshotPath()
		return err
	})
	return out, err
}

// DeleteSnapshot deletes snapshot name of directory p.
func (c *Client) DeleteSnapshot(ctx context.Context, p, name string) error {
	return c.call(ctx, "DeleteSnapshot", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.DeleteSnapshot(ctx, &api.DeleteSnapshotRequest{Path: p, Name: name}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// RenameSnapshot renames snapshot from of directory p to to.
func (c *Client) RenameSnapshot(ctx context.Context, p, from, to string) error {
	return c.call(ctx, "RenameSnapshot", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.RenameSnapshot(ctx, &api.RenameSnapshotRequest{Path: p, OldName: from, NewName: to}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// SnapshottableDirs lists the snapshottable directories the caller owns
// (a superuser: all), by path.
func (c *Client) SnapshottableDirs(ctx context.Context) ([]*api.SnapshottableDirectory, error) {
	var out []*api.SnapshottableDirectory
	err := c.call(ctx, "GetSnapshottableDirListing", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.GetSnapshottableDirListing(ctx, &api.GetSnapshottableDirListingRequest{Read: c.readOpts()}, trailerOpt(ctx))
		out = r.GetDirs()
		return err
	})
	return out, err
}
