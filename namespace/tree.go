package namespace

import (
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// Tree is the namespace. See the package comment for its locking rules.
type Tree struct {
	lim    Limits
	root   *inode
	inodes inodeTable // id -> inode (inodetable.go)
	blocks blockIndex // block id -> owning file (inodetable.go)

	nextID       ID
	nextBlockID  uint64
	nextGenStamp uint64

	numFiles, numDirs, numBlocks int

	// ogs interns owner/group pairs (ownerGroup).
	ogs map[ownerGroup]*ownerGroup

	// views are the open Views (view.go): while there are any, every
	// mutation calls touch on each inode before changing it.
	views []*View
	// epoch counts the views ever opened, and frozen is the epoch of the
	// newest open one (0 when none is open): a directory chunk made at an
	// epoch below frozen may be held by a view (children.go).
	epoch, frozen uint64

	// Namespace (HDFS) snapshots, hsnap.go: the snapshottable
	// directories, how many snapshot files reference each block, and the
	// blocks that only snapshots still hold (no live file has them).
	snappable map[ID]*inode
	snapRefs  map[uint64]int32
	held      map[uint64]heldBlock
}

// ownerGroup is an inode's owner and group. A tree keeps one per distinct
// pair (Tree.ownerGroup) and never changes one: setOwner points the inode
// at another.
type ownerGroup struct{ owner, group string }

// First values of the counters in a new tree.
const (
	firstBlockID  = 1
	firstGenStamp = 1000
)

// New returns a tree holding only the root directory, mode 0755, owned by
// superOwner:superGroup. Zero fields of l take their defaults. New panics
// if an owner or group name is longer than 255 bytes or holds a NUL (a
// configuration error: such a tree could not be saved).
func New(l Limits, superOwner, superGroup string) *Tree {
	if checkUserName("", "", "owner", superOwner) != nil || checkUserName("", "", "group", superGroup) != nil {
		panic("namespace: superuser owner or group name longer than 255 bytes or containing NUL")
	}
	t := &Tree{
		lim:          l.normalize(),
		ogs:          map[ownerGroup]*ownerGroup{},
		nextID:       RootID + 1,
		nextBlockID:  firstBlockID,
		nextGenStamp: firstGenStamp,
		numDirs:      1,
	}
	t.root = newDir("", 0755, t.ownerGroup(superOwner, superGroup), 0)
	t.root.id = RootID
	t.inodes.put(t.root)
	return t
}

// Limits returns the tree's (normalized) limits.
func (t *Tree) Limits() Limits { return t.lim }

// lookupChild returns the child of directory d called name, or nil.
// Children are a sorted slice, as in HDFS's INodeDirectory: a binary search
// costs log2(n) string compares (10 in a directory of 1000) and no memory
// beyond the slice, where a per-directory name map cost some 40 bytes a
// child.
func (d *inode) lookupChild(name string) *inode {
	c, _ := d.child(name)
	return c
}

// child returns the child of directory d called name, and its position
// (or where it would be inserted) in d.kids().
func (d *inode) child(name string) (*inode, kidPos) {
	return d.kids().find(name)
}

// insertChild adds c (whose name is not yet in d) to d.
func (t *Tree) insertChild(d, c *inode) {
	t.touch(d)
	_, at := d.child(c.name)
	t.insertKid(&d.extForWrite().kids, at, c)
	c.parent = d
}

// removeChild removes c from d, its parent.
func (t *Tree) removeChild(d, c *inode) {
	t.touch(d)
	_, at := d.child(c.name)
	t.removeKid(&d.ext.kids, at)
}

// resolve follows path (admitted: see admit) from the root as far as it
// exists, for caller c. It returns the deepest inode reached and the
// unresolved rest of the path ("" when it resolved fully); when it stops
// at a file, rest names what lies below. It checks, before looking a name
// up in a directory, that c may traverse it (Exec), so reaching an inode
// proves c had Exec on every directory above it. A path is resolved once
// per operation, and its checks run on the inodes that resolution found.
func (t *Tree) resolve(c *Caller, op string, path Path) (n *inode, rest string, err error) {
	return t.walk(c, op, path, false)
}

// resolveRead is resolve for an operation that only reads: it may pass
// through a snapshottable directory's ".snapshot" into a namespace
// snapshot (hsnap.go), which resolve refuses.
func (t *Tree) resolveRead(c *Caller, op string, path Path) (n *inode, rest string, err error) {
	return t.walk(c, op, path, true)
}

// walk is resolve and resolveRead: read says whether the walk may enter
// a namespace snapshot.
func (t *Tree) walk(c *Caller, op string, path Path, read bool) (n *inode, rest string, err error) {
	p := path.s
	n = t.root
	rest = p[1:]
	for rest != "" {
		if !n.dir() {
			return n, rest, nil
		}
		if !c.permits(n, Exec) {
			return nil, "", c.check(op, p, n, prefixOf(p, rest), Exec, "traverse")
		}
		comp, tail, _ := cutComp(rest)
		if path.snap && comp == DotSnapshot {
			if !read || n.snapDir() != nil {
				if n, err = t.enterDotSnapshot(op, p, n, prefixOf(p, rest), read); err != nil {
					return nil, "", err
				}
				rest = tail
				continue
			}
		}
		k := n.lookupChild(comp)
		if k == nil {
			if path.snap && !read {
				if err := reservedBelow(op, p, rest); err != nil {
					return nil, "", err
				}
			}
			return n, rest, nil
		}
		n, rest = k, tail
	}
	return n, "", nil
}

// lookup admits p and returns its inode: NotFound if it does not exist,
// NotDir if a file stands where a directory should.
func (t *Tree) lookup(op string, p Path) (*inode, error) { return t.lookupAs(nil, op, p) }

// lookupAs is lookup for caller c: Permission if c may not traverse to p
// (checked before any NotFound or NotDir below the denied directory).
func (t *Tree) lookupAs(c *Caller, op string, p Path) (*inode, error) {
	return t.lookupWith(c, op, p, false)
}

// lookupRead is lookupAs for an operation that only reads: p may name a
// namespace snapshot or what is in one (hsnap.go).
func (t *Tree) lookupRead(c *Caller, op string, p Path) (*inode, error) {
	return t.lookupWith(c, op, p, true)
}

func (t *Tree) lookupWith(c *Caller, op string, p Path, read bool) (*inode, error) {
	if err := t.admit(op, p); err != nil {
		return nil, err
	}
	n, rest, err := t.walk(c, op, p, read)
	if err != nil {
		return nil, err
	}
	if rest == "" {
		return n, nil
	}
	return nil, t.walkErr(op, p.s, n, rest)
}

// walkErr explains why resolve stopped at n with rest unresolved.
func (t *Tree) walkErr(op, p string, n *inode, rest string) error {
	if !n.dir() {
		return errs.Newf(errs.NotDir, op, p, "%s is a file, not a directory", prefixOf(p, rest))
	}
	if strings.IndexByte(rest, '/') >= 0 {
		comp, _, _ := cutComp(rest)
		return errs.Newf(errs.NotFound, op, p, "no such file or directory: %s does not exist", joinPath(prefixOf(p, rest), comp))
	}
	return errs.New(errs.NotFound, op, p, "no such file or directory")
}

// pathOf builds the path of n from its ancestors.
func pathOf(n *inode) string {
	if n.parent == nil {
		return "/"
	}
	size := 0
	for a := n; a.parent != nil; a = a.parent {
		size += 1 + len(a.name)
	}
	b := make([]byte, size)
	i := size
	for a := n; a.parent != nil; a = a.parent {
		i -= len(a.name)
		copy(b[i:], a.name)
		i--
		b[i] = '/'
	}
	return string(b)
}

// info describes n, found at path p.
func (n *inode) info(p string) FileInfo {
	fi := FileInfo{
		Path: p, ID: n.id, Name: n.name, IsDir: n.dir(),
		Owner: n.og.owner, Group: n.og.group, Mode: uint32(n.mode()), MtimeMs: n.mtime,
		State: n.state(), AtimeMs: n.atime(),
	}
	if n.parent != nil {
		fi.Parent = n.parent.id
	}
	if n.dir() {
		fi.Children = n.kids().len()
	} else {
		fi.Replication = uint32(n.repl())
		fi.BlockSize = n.blockSize
		fi.Length = n.length()
		fi.NumBlocks = n.nblocks()
		if w := n.writer(); w != nil {
			fi.Writer = *w
		}
	}
	return fi
}

// newInode allocates an id for n (unless it has one: a reserved id,
// PutFile), links it under parent and counts it.
func (t *Tree) newInode(parent, n *inode) {
	if n.id == 0 {
		n.id = t.nextID
		t.nextID++
	}
	t.inodes.put(n)
	t.insertChild(parent, n)
	charge(parent, 1, 0) // a new inode has no blocks yet
	if n.dir() {
		t.numDirs++
	} else {
		t.numFiles++
	}
}

// removeSubtree unlinks n and everything below it from the id and block
// indexes and the counts, appending the removed blocks to out in walk
// order, and takes what it removed off the usage of the quotas above n.
// It does not detach n from its parent.
func (t *Tree) removeSubtree(n *inode, out []Block) []Block {
	var u usage
	out = t.unindex(n, out, &u)
	charge(n.parent, -u.ns, -u.ds)
	return out
}

// unindex is removeSubtree's walk; it adds the names and space of what it
// removes to u.
func (t *Tree) unindex(n *inode, out []Block, u *usage) []Block {
	t.inodes.del(n.id)
	u.ns++
	if n.dir() {
		t.numDirs--
		if n.snapDir() != nil {
			delete(t.snappable, n.id) // it has no snapshots: delete and rename refuse those
		}
		for c := range n.kids().all() {
			out = t.unindex(c, out, u)
		}
		return out
	}
	u.ds += fileSpace(n)
	t.numFiles--
	var one [1]Block
	bs := n.blockList(&one)
	for _, b := range bs {
		t.dropBlock(n, b)
	}
	t.numBlocks -= len(bs)
	return append(out, bs...)
}

// checkPerm rejects mode bits outside 01777.
func checkPerm(op, p string, perm uint32) error {
	if perm&^permMask != 0 {
		return errs.Newf(errs.Invalid, op, p, "permission %#o has bits outside 01777", perm)
	}
	return nil
}

// checkUserName rejects over-long owner or group names.
func checkUserName(op, p, what, name string) error {
	if len(name) > maxUserName {
		return errs.Newf(errs.Invalid, op, p, "%s name too long: %d bytes, limit %d", what, len(name), maxUserName)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return errs.Newf(errs.Invalid, op, p, "%s name contains a NUL byte", what)
	}
	return nil
}

func checkReplication(op, p string, r uint32) error {
	if r < MinReplication || r > MaxReplication {
		return errs.Newf(errs.Invalid, op, p, "replication %d out of range %d..%d", r, MinReplication, MaxReplication)
	}
	return nil
}

// orInherit returns v, or def when v is empty.
func orInherit(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// maxNames bounds the owner/group pairs a tree interns, and the names an
// image reader does; past it, a pair is allocated per inode (a cluster has
// far fewer users and groups).
const maxNames = 1 << 16

// ownerGroup returns the tree's record of the pair (owner, group), so that
// a million files of one owner and group share one record and one copy of
// the names. What is interned changes no observable state.
func (t *Tree) ownerGroup(owner, group string) *ownerGroup {
	if og := t.ogs[ownerGroup{owner, group}]; og != nil {
		return og
	}
	og := &ownerGroup{strings.Clone(owner), strings.Clone(group)}
	if len(t.ogs) < maxNames {
		t.ogs[*og] = og
	}
	return og
}
