package webui

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// The browse pages read the namespace as the viewer through the client
// service (GetFileInfo, ListStatus, GetBlockLocations), the entrance every
// other read takes: its path validation, its read barrier and the FSM's
// permission checks apply, so a directory lists only with r and x on it
// and a file's blocks show only with r on the file. The calls carry the
// request's context, which holds the identity the HTTP authorizer named
// (security.IdentityFromContext), and that is whom the client service
// reads as. The reads are the client service's default, linearizable: a
// follower's page shows every write the leader acknowledged before it.

// browseTimeout bounds the reads of one browse page (a follower asks the
// leader for its read index first).
const browseTimeout = 10 * time.Second

// crumb is one ancestor in the path shown above a browse page.
type crumb struct{ Name, Path string }

// entryView is one inode on a browse page.
type entryView struct {
	Name, Path   string
	IsDir        bool
	Perm         string
	Owner, Group string
	Size         uint64
	Replication  uint32
	BlockSize    uint64
	Mtime        time.Time
	Children     uint64
	Blocks       uint64
	Open         bool // under construction
}

func newEntryView(fs *api.FileStatus, p string) entryView {
	return entryView{
		Name: path.Base(p), Path: p, IsDir: fs.IsDir, Perm: permString(fs.IsDir, fs.Mode),
		Owner: fs.Owner, Group: fs.Group, Size: fs.Length, Replication: fs.Replication, BlockSize: fs.BlockSize,
		Mtime: time.UnixMilli(fs.MtimeUnixMs), Children: fs.Children, Blocks: fs.Blocks, Open: fs.UnderConstruction,
	}
}

// dirView is the content of a directory's page.
type dirView struct {
	Self    entryView
	Crumbs  []crumb
	Entries []entryView
	// Next is the next page's first entry's predecessor ("" on the last page).
	Next string
}

// replicaView is one replica of a block.
type replicaView struct {
	Datanode string
	Live     bool
}

// blockView is one block of a file.
type blockView struct {
	ID, GenStamp   uint64
	Offset, Length uint64
	CRC            string
	Replicas       []replicaView
}

// fileView is the content of a file's page.
type fileView struct {
	Self   entryView
	Crumbs []crumb
	Blocks []blockView
}

func (u *UI) browse(w http.ResponseWriter, r *http.Request) error {
	p := path.Clean("/" + r.PathValue("path"))
	ctx, cancel := context.WithTimeout(r.Context(), browseTimeout)
	defer cancel()
	info, err := u.client.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: p})
	if err != nil {
		return err
	}
	self := newEntryView(info.Status, p)
	if !info.Status.IsDir {
		return u.file(ctx, w, r, self)
	}
	list, err := u.client.ListStatus(ctx, &api.ListStatusRequest{Path: p, StartAfter: r.URL.Query().Get("after")})
	if err != nil {
		return err
	}
	v := dirView{Self: self, Crumbs: crumbs(p)}
	for _, e := range list.Entries {
		v.Entries = append(v.Entries, newEntryView(e, path.Join(p, path.Base(e.Path))))
	}
	if list.HasMore && len(v.Entries) > 0 {
		v.Next = v.Entries[len(v.Entries)-1].Name
	}
	u.render(w, http.StatusOK, "dir", u.newPage(r, p, v))
	return nil
}

// file renders a file's page: its blocks and where their replicas are.
func (u *UI) file(ctx context.Context, w http.ResponseWriter, r *http.Request, self entryView) error {
	locs, err := u.client.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: self.Path})
	if err != nil {
		return err
	}
	n := len(locs.BlockIds)
	if len(locs.GenStamps) < n || len(locs.Lengths) < n || len(locs.ReplicaCounts) < n {
		return errs.New(errs.Internal, "GetBlockLocations", self.Path, "malformed block locations reply")
	}
	v := fileView{Self: self, Crumbs: crumbs(self.Path)}
	off, next := locs.FirstOffset, 0
	for i, id := range locs.BlockIds {
		b := blockView{ID: id, GenStamp: locs.GenStamps[i], Offset: off, Length: locs.Lengths[i], CRC: "-"}
		off += b.Length
		if i < len(locs.Crc32Cs) && locs.Crc32Cs[i] != 0 {
			b.CRC = fmt.Sprintf("%08x", uint32(locs.Crc32Cs[i]))
		}
		end := next + int(locs.ReplicaCounts[i])
		if end > len(locs.ReplicaIndexes) {
			return errs.New(errs.Internal, "GetBlockLocations", self.Path, "malformed block locations reply")
		}
		for _, di := range locs.ReplicaIndexes[next:end] {
			if int(di) >= len(locs.Datanodes) {
				return errs.New(errs.Internal, "GetBlockLocations", self.Path, "malformed block locations reply")
			}
			d := locs.Datanodes[di]
			b.Replicas = append(b.Replicas, replicaView{Datanode: d.Id, Live: d.State == "live"})
		}
		next = end
		v.Blocks = append(v.Blocks, b)
	}
	u.render(w, http.StatusOK, "file", u.newPage(r, self.Path, v))
	return nil
}

// crumbs returns the ancestors of p from the root, p included.
func crumbs(p string) []crumb {
	out := []crumb{{Name: "/", Path: "/"}}
	if p == "/" {
		return out
	}
	acc := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		acc += "/" + part
		out = append(out, crumb{Name: part, Path: acc})
	}
	return out
}

// permString renders a mode as ls does: drwxr-xr-x, with t or T in the
// last place for the sticky bit.
func permString(dir bool, mode uint32) string {
	b := []byte("-rwxrwxrwx")
	if dir {
		b[0] = 'd'
	}
	for i := 0; i < 9; i++ {
		if mode&(1<<(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	if mode&0o1000 != 0 {
		if b[9] == 'x' {
			b[9] = 't'
		} else {
			b[9] = 'T'
		}
	}
	return string(b)
}
