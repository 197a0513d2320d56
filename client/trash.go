package client

import (
	"context"
	"sync"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/trash"
)

// trashValidity is how long the client trusts the trash settings it read,
// as HDFS clients keep the namenode's server defaults for an hour
// (dfs.client.server-defaults.validity.period.ms): a rm of many paths
// asks once, not once a path.
const trashValidity = time.Hour

// trashSettings caches TrashInterval's answer.
type trashSettings struct {
	mu       sync.Mutex
	read     time.Time // zero: never read
	interval time.Duration
	user     string
}

// TrashInterval returns how long the cluster keeps deleted files in the
// trash (0: it has none) and whose trash this client's is (the user the
// namenode authenticated it as), as the namenode says (ClusterStatus),
// read at most once in trashValidity.
func (c *Client) TrashInterval(ctx context.Context) (time.Duration, string, error) {
	t := &c.trash
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.read.IsZero() && time.Since(t.read) < trashValidity {
		return t.interval, t.user, nil
	}
	st, err := c.ClusterStatus(ctx)
	if err != nil {
		return 0, "", err
	}
	t.user = st.Caller
	if t.user == "" {
		t.user = c.cfg.User
	}
	t.interval, t.read = time.Duration(st.TrashIntervalMs)*time.Millisecond, time.Now()
	return t.interval, t.user, nil
}

// MoveToTrash moves p into the user's trash, /user/<user>/.Trash/Current,
// if the cluster has a trash, and returns where it went. With no trash,
// or for a path in the trash already, it moves nothing and returns "":
// the caller deletes for good, as HDFS's shell does. The trash's own
// ancestors are refused (errs.Invalid).
func (c *Client) MoveToTrash(ctx context.Context, p string) (string, error) {
	iv, user, err := c.TrashInterval(ctx)
	if err != nil || iv == 0 {
		return "", err
	}
	return trash.MoveToTrash(ctx, clientFS{c}, user, p, time.Now())
}

// Expunge empties the user's own trash as `hdfs dfs -expunge` does: it
// deletes the checkpoints older than the trash interval and checkpoints
// Current. It returns how many checkpoints it deleted.
func (c *Client) Expunge(ctx context.Context) (int, error) {
	iv, user, err := c.TrashInterval(ctx)
	if err != nil {
		return 0, err
	}
	if iv == 0 {
		return 0, errs.New(errs.Precondition, "client.Client.Expunge", "", "the cluster has no trash (--trash-interval 0)")
	}
	fs, now := clientFS{c}, time.Now()
	n, err := trash.Expire(ctx, fs, user, iv, now)
	if err != nil {
		return n, err
	}
	_, err = trash.Checkpoint(ctx, fs, user, now)
	return n, err
}

// clientFS is trash.FS over the client's calls, as its user.
type clientFS struct{ c *Client }

func (f clientFS) Stat(ctx context.Context, p string) (*api.FileStatus, error) {
	return f.c.Stat(ctx, p)
}

func (f clientFS) Mkdirs(ctx context.Context, p string, perm uint32, parents bool) error {
	return f.c.Mkdirs(ctx, p, perm, parents)
}

func (f clientFS) Rename(ctx context.Context, src, dst string) error {
	return f.c.Rename(ctx, src, dst)
}

func (f clientFS) Delete(ctx context.Context, p string, recursive bool) error {
	return f.c.Delete(ctx, p, recursive)
}

func (f clientFS) List(ctx context.Context, p string) ([]*api.FileStatus, error) {
	var out []*api.FileStatus
	for e, err := range f.c.List(ctx, p) {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
