package namespace

import (
	"fmt"
	"math"

	"github.com/blockfs/blockfs/errs"
)

// Quotas, as HDFS defines them (docs/OPERATIONS.md, "Quotas"): a directory
// may carry a namespace quota (the most names, files and directories, its
// tree may hold, itself included) and a space quota (the most bytes times
// replication its files may consume). As in HDFS, usage is kept only on
// directories that carry a quota, and kept incrementally: every mutation
// walks up the ancestors of what it changed (a path it already resolved)
// and adjusts the usage of the ones with a quota, checking first, when it
// grows, that no limit is passed. Nothing on the write path walks a
// subtree, except what HDFS walks too: delete (which unlinks the subtree
// anyway) and a rename that moves a subtree out of or into a directory with
// a quota, not counting their common ancestors (the moved tree's usage is
// taken from its root when that has a quota).
//
// A file's space is HDFS's storagespace: replication times its length,
// with the last block of a file under construction counted at the full
// block size while no CRC is committed for it (the block being written;
// AddBlock charges a full block, Complete and the next AddBlock correct it
// to the real length).

// QuotaReset clears a quota and QuotaDontSet leaves it as it is (HDFS's
// HdfsConstants.QUOTA_RESET and QUOTA_DONT_SET). A quota of QuotaReset
// means none, also in a ContentSummary.
const (
	QuotaReset   int64 = -1
	QuotaDontSet int64 = math.MaxInt64
)

// The exception names HDFS raises when a quota would be exceeded. Errors
// carry them at the start of their message (kind errs.Exhausted), so each
// door can name the exception (WebHDFS's RemoteException).
const (
	NSQuotaExceeded = "NSQuotaExceededException"
	DSQuotaExceeded = "DSQuotaExceededException"
)

// quota is a directory's quota and usage. The limits (QuotaReset: none)
// are never changed once the quota is linked into an inode's ext, so a
// view reads them without a lock (SetQuota links a new one); the usage
// counters are written by mutations and read only under the tree's lock,
// never by a view's encoder.
type quota struct {
	ns, ds         int64
	nsUsed, dsUsed int64
}

// usage is a count of names and of space.
type usage struct{ ns, ds int64 }

// quota returns n's quota, nil when it has none.
func (n *inode) quota() *quota {
	if n.ext == nil {
		return nil
	}
	return n.ext.quota
}

// fileSpace returns the space file f consumes (see the comment above).
func fileSpace(f *inode) int64 {
	return spaceWith(f, f.repl(), f.state() == UnderConstruction)
}

// spaceWith is the space of file f with replication repl, open or not.
func spaceWith(f *inode, repl uint8, open bool) int64 {
	l := f.length()
	if open && f.nblocks() > 0 {
		if last := f.lastBlock(); !last.HasCRC {
			l = l - last.Length + f.blockSize
		}
	}
	return int64(repl) * int64(l)
}

// chargeSpace charges the quotas above file f with the change of its
// space from before (what fileSpace returned before f changed).
func chargeSpace(f *inode, before int64) {
	if f.parent != nil {
		charge(f.parent, 0, fileSpace(f)-before)
	}
}

// charge adds (ns, ds) to the usage of every directory with a quota from
// d up to the root.
func charge(d *inode, ns, ds int64) { chargeTo(d, nil, ns, ds) }

// chargeTo is charge up to, not including, stop.
func chargeTo(d, stop *inode, ns, ds int64) {
	if ns == 0 && ds == 0 {
		return
	}
	for a := d; a != stop; a = a.parent {
		if q := a.quota(); q != nil {
			q.nsUsed += ns
			q.dsUsed += ds
		}
	}
}

// checkQuota returns the quota error of adding (ns, ds) below d, checking
// every directory with a quota from d up to, not including, stop. Only
// growth is checked: a change that shrinks usage passes even above a
// limit (a limit may be set below the usage), as in HDFS.
func checkQuota(op, p string, d, stop *inode, ns, ds int64) error {
	if ns <= 0 && ds <= 0 {
		return nil
	}
	for a := d; a != stop; a = a.parent {
		q := a.quota()
		if q == nil {
			continue
		}
		if ns > 0 && q.ns >= 0 && q.nsUsed+ns > q.ns {
			return errs.Newf(errs.Exhausted, op, p, "%s: The NameSpace quota (directories and files) of directory %s is exceeded: quota=%d file count=%d",
				NSQuotaExceeded, pathOf(a), q.ns, q.nsUsed+ns)
		}
		if ds > 0 && q.ds >= 0 && q.dsUsed+ds > q.ds {
			return errs.Newf(errs.Exhausted, op, p, "%s: The DiskSpace quota of %s is exceeded: quota = %d B but diskspace consumed = %d B",
				DSQuotaExceeded, pathOf(a), q.ds, q.dsUsed+ds)
		}
	}
	return nil
}

// subtreeUsage returns the names and space of the tree rooted at n. With
// cached, a directory with a quota below n (or n itself) answers from its
// usage counters instead of being walked.
func subtreeUsage(n *inode, cached bool) usage {
	if !n.dir() {
		return usage{1, fileSpace(n)}
	}
	if q := n.quota(); cached && q != nil {
		return usage{q.nsUsed, q.dsUsed}
	}
	u := usage{ns: 1}
	for k := range n.kids().all() {
		ku := subtreeUsage(k, cached)
		u.ns += ku.ns
		u.ds += ku.ds
	}
	return u
}

// commonAncestor returns the deepest directory that is an ancestor of (or
// is) both a and b.
func commonAncestor(a, b *inode) *inode {
	da, db := depth(a), depth(b)
	for ; da > db; da-- {
		a = a.parent
	}
	for ; db > da; db-- {
		b = b.parent
	}
	for a != b {
		a, b = a.parent, b.parent
	}
	return a
}

func depth(n *inode) int {
	d := 0
	for ; n.parent != nil; n = n.parent {
		d++
	}
	return d
}

// anyQuota reports whether a directory from d up to, not including, stop
// has a quota.
func anyQuota(d, stop *inode) bool {
	for a := d; a != stop; a = a.parent {
		if a.quota() != nil {
			return true
		}
	}
	return false
}

// SetQuota sets the quotas of directory p as the system (no caller
// check). See Session.SetQuota.
func (t *Tree) SetQuota(p Path, ns, ds int64) error {
	return t.setQuota(nil, "namespace.Tree.SetQuota", p, ns, ds)
}

// SetQuota sets directory p's namespace quota ns and space quota ds, with
// HDFS's semantics: QuotaReset clears one, QuotaDontSet leaves it as it
// is, and any other negative value is Invalid. Only a superuser may
// (Permission). A file is NotFound, as HDFS answers "Cannot set quota on a
// file". A limit may be set below the current usage: later growth is then
// refused. Setting a quota on a directory that had none computes its usage
// once, by a walk of its tree (deterministic: in name order).
func (s Session) SetQuota(p Path, ns, ds int64) error { return s.t.setQuota(s.c, s.op, p, ns, ds) }

func (t *Tree) setQuota(c *Caller, op string, path Path, ns, ds int64) error {
	if c != nil && !c.Super {
		return errs.Newf(errs.Permission, op, path.s, "Access denied for user %s. Superuser privilege is required", c.User)
	}
	bad := func(v int64) bool { return v < 0 && v != QuotaReset && v != QuotaDontSet }
	if bad(ns) || bad(ds) {
		return errs.Newf(errs.Invalid, op, path.s, "Illegal value for nsQuota or ssQuota : %d and %d", ns, ds)
	}
	n, err := t.lookupAs(c, op, path)
	if err != nil {
		return err
	}
	if !n.dir() {
		return errs.New(errs.NotFound, op, path.s, "Cannot set quota on a file: "+path.s)
	}
	old := n.quota()
	nq := quota{ns: QuotaReset, ds: QuotaReset}
	if old != nil {
		nq = *old
	}
	if ns != QuotaDontSet {
		nq.ns = ns
	}
	if ds != QuotaDontSet {
		nq.ds = ds
	}
	if old != nil && nq == *old {
		return nil
	}
	t.touch(n)
	switch {
	case nq.ns == QuotaReset && nq.ds == QuotaReset:
		n.ext.quota = nil
	case old == nil:
		u := subtreeUsage(n, false)
		nq.nsUsed, nq.dsUsed = u.ns, u.ds
		n.extForWrite().quota = &nq
	default:
		n.ext.quota = &nq // a new quota: a view may hold the old one
	}
	return nil
}

// ContentSummary is HDFS's ContentSummary of a directory tree (or a
// file): Length is the bytes of its files, SpaceConsumed their space (as
// quotas count it), DirectoryCount includes the directory itself; Quota
// and SpaceQuota are the root's limits, QuotaReset (-1) when unset.
type ContentSummary struct {
	Length, FileCount, DirectoryCount int64
	Quota, SpaceConsumed, SpaceQuota  int64
}

// ContentSummary returns the content summary of p. It walks p's tree (a
// read, as in HDFS); the caller needs Exec on p's ancestors and Read and
// Exec on every directory of the tree (HDFS checks READ_EXECUTE on the
// subtree).
func (s Session) ContentSummary(path Path) (ContentSummary, error) {
	n, err := s.t.lookupRead(s.c, s.op, path)
	if err != nil {
		return ContentSummary{}, err
	}
	if err := s.c.checkSubtree(s.op, path.s, n, Read|Exec); err != nil {
		return ContentSummary{}, err
	}
	cs := ContentSummary{Quota: QuotaReset, SpaceQuota: QuotaReset}
	if q := n.quota(); q != nil {
		cs.Quota, cs.SpaceQuota = q.ns, q.ds
	}
	summarize(n, &cs)
	return cs, nil
}

func summarize(n *inode, cs *ContentSummary) {
	if !n.dir() {
		cs.FileCount++
		cs.Length += int64(n.length())
		cs.SpaceConsumed += fileSpace(n)
		return
	}
	cs.DirectoryCount++
	for k := range n.kids().all() {
		summarize(k, cs)
	}
}

// QuotaUsage is HDFS's QuotaUsage of a directory: its names (files and
// directories, itself included) and space consumed, and its limits
// (QuotaReset when unset).
type QuotaUsage struct {
	FileAndDirectoryCount, Quota, SpaceConsumed, SpaceQuota int64
}

// QuotaUsage returns p's quota usage: from its counters when p has a
// quota (no walk), else by a walk of its tree, as HDFS answers
// getQuotaUsage. The caller needs what ContentSummary needs.
func (s Session) QuotaUsage(path Path) (QuotaUsage, error) {
	n, err := s.t.lookupRead(s.c, s.op, path)
	if err != nil {
		return QuotaUsage{}, err
	}
	if err := s.c.checkSubtree(s.op, path.s, n, Read|Exec); err != nil {
		return QuotaUsage{}, err
	}
	qu := QuotaUsage{Quota: QuotaReset, SpaceQuota: QuotaReset}
	if q := n.quota(); q != nil {
		qu.Quota, qu.SpaceQuota = q.ns, q.ds
	}
	u := subtreeUsage(n, true)
	qu.FileAndDirectoryCount, qu.SpaceConsumed = u.ns, u.ds
	return qu, nil
}

// recountQuotas sets the usage of every directory with a quota from a
// walk of the whole tree (after an image is read: images keep the limits,
// not the usage, as HDFS's fsimage does).
func (t *Tree) recountQuotas() {
	var walk func(n *inode) usage
	walk = func(n *inode) usage {
		if !n.dir() {
			return usage{1, fileSpace(n)}
		}
		u := usage{ns: 1}
		for k := range n.kids().all() {
			ku := walk(k)
			u.ns += ku.ns
			u.ds += ku.ds
		}
		if q := n.quota(); q != nil {
			q.nsUsed, q.dsUsed = u.ns, u.ds
		}
		return u
	}
	walk(t.root)
}

// CheckQuotas recomputes the usage of every directory with a quota and
// returns an error naming the first whose counters differ (a test and
// fsck aid; it walks the whole tree).
func (t *Tree) CheckQuotas() error {
	var bad error
	for _, n := range t.quotaDirs() {
		u := subtreeUsage(n, false)
		if q := n.quota(); bad == nil && (q.nsUsed != u.ns || q.dsUsed != u.ds) {
			bad = errs.New(errs.Internal, "namespace.Tree.CheckQuotas", pathOf(n),
				fmt.Sprintf("quota usage %d names, %d bytes; the tree holds %d, %d", q.nsUsed, q.dsUsed, u.ns, u.ds))
		}
	}
	return bad
}

// quotaDirs returns the directories with a quota, in depth-first name
// order.
func (t *Tree) quotaDirs() []*inode {
	var out []*inode
	var walk func(n *inode)
	walk = func(n *inode) {
		if !n.dir() {
			return
		}
		if n.quota() != nil {
			out = append(out, n)
		}
		for k := range n.kids().all() {
			walk(k)
		}
	}
	walk(t.root)
	return out
}
