// Package trash is HDFS's trash: what a user deletes is moved under
// /user/<user>/.Trash/Current instead, and checkpoints of it (Current
// renamed to the time it was taken, yyMMddHHmmss) are deleted for good
// once older than the retention interval (fs.trash.interval). The Go
// client moves into the trash (MoveToTrash) and expunges a user's own
// (Expunge); the namenode's leader runs Emptier over every user's.
//
// Everything here is namespace calls made through FS, as the caller
// they are made for: a user's client moves and expunges with the user's
// permissions, the emptier as the superuser.
package trash

import (
	"context"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// Names of the trash's parts, as HDFS names them.
const (
	Dir     = ".Trash"
	Current = "Current"
	// checkpointLayout is a checkpoint's name: its time, to the second,
	// in UTC (HDFS: yyMMddHHmmss).
	checkpointLayout = "060102150405"
)

// Root is user's trash root, /user/<user>/.Trash (WebHDFS GETTRASHROOT).
func Root(user string) string { return path.Join("/user", user, Dir) }

// FS is the namespace calls the trash makes, all as one caller.
type FS interface {
	Stat(ctx context.Context, p string) (*api.FileStatus, error)
	Mkdirs(ctx context.Context, p string, perm uint32, parents bool) error
	Rename(ctx context.Context, src, dst string) error
	Delete(ctx context.Context, p string, recursive bool) error
	// List lists a directory's entries.
	List(ctx context.Context, p string) ([]*api.FileStatus, error)
}

// Inside reports whether p is user's trash root or under it: deleting
// there is for good, never a move into the trash again.
func Inside(user, p string) bool {
	r := Root(user)
	return p == r || strings.HasPrefix(p, r+"/")
}

// MoveToTrash moves p (absolute, clean) into user's trash and returns
// where it went: /user/<user>/.Trash/Current<p>, or that name with the
// time in milliseconds appended if it is taken (HDFS does the same). The
// parents are made (mode 0700). A path inside the trash moves nothing
// and returns "": deleting there is for good (HDFS's shell does the
// same). The trash's ancestors (/, /user, the home directory) are refused
// with errs.Invalid: they cannot go into the trash they hold.
func MoveToTrash(ctx context.Context, fs FS, user, p string, now time.Time) (string, error) {
	const op = "trash.MoveToTrash"
	if Inside(user, p) {
		return "", nil
	}
	if r := Root(user); strings.HasPrefix(r, p+"/") || p == "/" {
		return "", errs.New(errs.Invalid, op, p, "cannot move it to the trash, as it contains the trash; delete it with -skipTrash")
	}
	dst := path.Join(Root(user), Current, p)
	if err := fs.Mkdirs(ctx, path.Dir(dst), 0o700, true); err != nil {
		return "", err
	}
	if _, err := fs.Stat(ctx, dst); err == nil {
		dst += strconv.FormatInt(now.UnixMilli(), 10)
	} else if !errs.Is(err, errs.NotFound) {
		return "", err
	}
	if err := fs.Rename(ctx, p, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// Checkpoint renames user's Current to a checkpoint named for now; no
// Current is no checkpoint. It returns the checkpoint's path, or "".
func Checkpoint(ctx context.Context, fs FS, user string, now time.Time) (string, error) {
	cur := path.Join(Root(user), Current)
	if _, err := fs.Stat(ctx, cur); errs.Is(err, errs.NotFound) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	name := path.Join(Root(user), now.UTC().Format(checkpointLayout))
	for i := 1; ; i++ { // two checkpoints in one second: HDFS appends -N
		if _, err := fs.Stat(ctx, name); errs.Is(err, errs.NotFound) {
			break
		} else if err != nil {
			return "", err
		}
		name = path.Join(Root(user), now.UTC().Format(checkpointLayout)+"-"+strconv.Itoa(i))
	}
	return name, fs.Rename(ctx, cur, name)
}

// Expire deletes user's checkpoints older than interval as of now and
// returns how many. Entries of the trash root that are not checkpoints
// are left alone.
func Expire(ctx context.Context, fs FS, user string, interval time.Duration, now time.Time) (int, error) {
	entries, err := fs.List(ctx, Root(user))
	if errs.Is(err, errs.NotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		name := path.Base(e.Path)
		if i := strings.IndexByte(name, '-'); i >= 0 {
			name = name[:i]
		}
		at, err := time.ParseInLocation(checkpointLayout, name, time.UTC)
		if err != nil || !e.IsDir || now.Sub(at) <= interval {
			continue
		}
		if err := fs.Delete(ctx, e.Path, true); err != nil && !errs.Is(err, errs.NotFound) {
			return n, err
		}
		n++
	}
	return n, nil
}

// EmptyAll is one pass of the emptier over every user's trash (each
// directory of /user with a trash): expire the checkpoints older than
// interval, then checkpoint Current, as HDFS's Trash.Emptier does every
// checkpoint interval. A user whose trash fails is skipped; the first
// error is returned after the pass.
func EmptyAll(ctx context.Context, fs FS, interval time.Duration, now time.Time) (expired int, err error) {
	homes, lerr := fs.List(ctx, "/user")
	if errs.Is(lerr, errs.NotFound) {
		return 0, nil
	}
	if lerr != nil {
		return 0, lerr
	}
	for _, h := range homes {
		if !h.IsDir {
			continue
		}
		user := path.Base(h.Path)
		n, e := Expire(ctx, fs, user, interval, now)
		expired += n
		if e == nil {
			_, e = Checkpoint(ctx, fs, user, now)
		}
		if e != nil && err == nil {
			err = e
		}
	}
	return expired, err
}
