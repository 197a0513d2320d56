package namenode

import (
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/blockfs/blockfs/api"
)

// The browse pages read the namespace as the viewer, through the
// ClientService reads themselves (GetFileInfo, ListStatus) and the block
// lookup GetBlockLocations uses, so every permission check of the API
// applies: a directory lists only with r and x on it, a file's blocks show
// only with r on the file. They read this node's state (stale reads): a
// follower shows what it has applied.

// staleRead is the read option of every browse page.
var staleRead = &api.ReadOptions{Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE}

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

func (n *Namenode) uiBrowse(w http.ResponseWriter, r *http.Request) error {
	p := path.Clean("/" + r.PathValue("path"))
	ctx := r.Context()
	cs := &clientService{n: n}
	info, err := cs.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: p, Read: staleRead})
	if err != nil {
		return err
	}
	self := newEntryView(info.Status, p)
	if !info.Status.IsDir {
		return n.uiFile(w, r, self)
	}
	after := r.URL.Query().Get("after")
	list, err := cs.ListStatus(ctx, &api.ListStatusRequest{Path: p, StartAfter: after, Read: staleRead})
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
	n.render(w, http.StatusOK, "dir", n.newPage(r, p, v))
	return nil
}

// uiFile renders a file's page: its blocks and where their replicas are.
func (n *Namenode) uiFile(w http.ResponseWriter, r *http.Request, self entryView) error {
	user, groups := n.reader(r.Context())
	locs, err := n.blockLocations(user, groups, &api.GetBlockLocationsRequest{Path: self.Path, Read: staleRead})
	if err != nil {
		return err
	}
	v := fileView{Self: self, Crumbs: crumbs(self.Path)}
	off, next := locs.FirstOffset, uint32(0)
	for i, id := range locs.BlockIds {
		b := blockView{ID: id, GenStamp: locs.GenStamps[i], Offset: off, Length: locs.Lengths[i], CRC: "-"}
		off += b.Length
		if i < len(locs.Crc32Cs) && locs.Crc32Cs[i] != 0 {
			b.CRC = fmt.Sprintf("%08x", uint32(locs.Crc32Cs[i]))
		}
		for _, di := range locs.ReplicaIndexes[next : next+locs.ReplicaCounts[i]] {
			d := locs.Datanodes[di]
			b.Replicas = append(b.Replicas, replicaView{Datanode: d.Id, Live: d.State == "live"})
		}
		next += locs.ReplicaCounts[i]
		v.Blocks = append(v.Blocks, b)
	}
	n.render(w, http.StatusOK, "file", n.newPage(r, self.Path, v))
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
