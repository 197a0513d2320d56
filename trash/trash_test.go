package trash

import (
	"context"
	"path"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// memFS is a namespace in memory: a set of paths, directories marked.
type memFS map[string]bool // path -> is a directory

func (m memFS) Stat(_ context.Context, p string) (*api.FileStatus, error) {
	d, ok := m[p]
	if !ok {
		return nil, errs.New(errs.NotFound, "Stat", p, "no such file")
	}
	return &api.FileStatus{Path: p, IsDir: d}, nil
}

func (m memFS) Mkdirs(_ context.Context, p string, _ uint32, _ bool) error {
	for ; p != "/"; p = path.Dir(p) {
		m[p] = true
	}
	return nil
}

func (m memFS) Rename(_ context.Context, src, dst string) error {
	if _, ok := m[src]; !ok {
		return errs.New(errs.NotFound, "Rename", src, "no such file")
	}
	for p, d := range m {
		if p == src || strings.HasPrefix(p, src+"/") {
			delete(m, p)
			m[dst+strings.TrimPrefix(p, src)] = d
		}
	}
	return nil
}

func (m memFS) Delete(_ context.Context, p string, _ bool) error {
	for q := range m {
		if q == p || strings.HasPrefix(q, p+"/") {
			delete(m, q)
		}
	}
	return nil
}

func (m memFS) List(_ context.Context, p string) ([]*api.FileStatus, error) {
	if !m[p] {
		return nil, errs.New(errs.NotFound, "List", p, "no such directory")
	}
	var out []*api.FileStatus
	for q, d := range m {
		if path.Dir(q) == p && q != p {
			out = append(out, &api.FileStatus{Path: q, IsDir: d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func TestTrashCycle(t *testing.T) {
	ctx := context.Background()
	fs := memFS{"/data": true, "/data/a": false, "/user": true, "/user/alice": true}
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	dst, err := MoveToTrash(ctx, fs, "alice", "/data/a", t0)
	if err != nil || dst != "/user/alice/.Trash/Current/data/a" || fs["/data/a"] || !fsHas(fs, dst) {
		t.Fatalf("move: %q %v %v", dst, err, fs)
	}
	fs["/data/a"] = false // a second file of the same name
	dst2, err := MoveToTrash(ctx, fs, "alice", "/data/a", t0)
	if err != nil || dst2 != dst+"1796205600000" {
		t.Fatalf("second move: %q %v", dst2, err)
	}
	for _, in := range []string{"/user/alice/.Trash/Current/data/a", "/user/alice/.Trash"} {
		if dst, err := MoveToTrash(ctx, fs, "alice", in, t0); dst != "" || err != nil || !fsHas(fs, in) {
			t.Errorf("move %s, in the trash: %q %v (want nothing moved)", in, dst, err)
		}
	}
	for _, bad := range []string{"/user/alice", "/user", "/"} {
		if _, err := MoveToTrash(ctx, fs, "alice", bad, t0); errs.KindOf(err) != errs.Invalid {
			t.Errorf("move %s: %v, want Invalid", bad, err)
		}
	}
	cp, err := Checkpoint(ctx, fs, "alice", t0)
	if err != nil || cp != "/user/alice/.Trash/261202100000" || fsHas(fs, "/user/alice/.Trash/Current") {
		t.Fatalf("checkpoint: %q %v", cp, err)
	}
	if cp, err := Checkpoint(ctx, fs, "alice", t0); cp != "" || err != nil {
		t.Fatalf("checkpoint of nothing: %q %v", cp, err)
	}
	fs["/user/alice/.Trash/notes"] = true // not a checkpoint: kept
	if n, err := Expire(ctx, fs, "alice", time.Hour, t0.Add(time.Hour)); n != 0 || err != nil {
		t.Fatalf("expire within the interval: %d %v", n, err)
	}
	if n, err := EmptyAll(ctx, fs, time.Hour, t0.Add(time.Hour+time.Second)); n != 1 || err != nil || fsHas(fs, cp) || !fsHas(fs, "/user/alice/.Trash/notes") {
		t.Fatalf("emptier: %d %v %v", n, err, fs)
	}
}

func fsHas(fs memFS, p string) bool { _, ok := fs[p]; return ok }
