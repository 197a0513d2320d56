package localcluster_test

import (
	"bytes"
	"testing"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// TestTruncate: HDFS's truncate on replication 3, through the lease
// cluster (3 namenodes, 5 datanodes, mTLS). At a block boundary the call
// is done at once and the dropped blocks' replicas are deleted; inside a
// block the file stays under construction until the primary has cut
// every replica to the new length under a new generation stamp, and
// reads then return the prefix, from every replica.
func TestTruncate(t *testing.T) {
	c, cl := startLeaseCluster(t)
	data := randBytes(3*blockSize + 300)
	p := "/shared/t"
	writeFile(t, cl, p, data)
	before := waitReplicas(t, cl, p, 3)
	dropped := before.Blocks[3].Block

	// At a boundary: done, the last block is gone, its replicas too.
	done, err := cl.Truncate(ctxT(t), p, 3*blockSize)
	if err != nil || !done {
		t.Fatalf("truncate at a boundary: done %v, %v", done, err)
	}
	readBack(t, cl, p, data[:3*blockSize])
	waitFor(t, ctxT(t), "the dropped block's replicas to go", func() bool {
		for _, d := range c.Datanodes() {
			if _, ok := d.Store().Stat(dropped.Id); ok {
				return false
			}
		}
		return true
	})

	// Inside the second block: recovery cuts it.
	const cut = blockSize + 123
	old := waitReplicas(t, cl, p, 3).Blocks[1].Block
	done, err = cl.Truncate(ctxT(t), p, cut)
	if err != nil || done {
		t.Fatalf("truncate inside a block: done %v, %v", done, err)
	}
	if err := cl.WaitClosed(ctxT(t), p); err != nil {
		t.Fatal(err)
	}
	st, err := cl.Stat(ctxT(t), p)
	if err != nil || st.Length != cut || st.Blocks != 2 {
		t.Fatalf("after recovery: %v %v", st, err)
	}
	readBack(t, cl, p, data[:cut])
	checkReplicas(t, c, cl, p, data[:cut], 3)
	locs := waitReplicas(t, cl, p, 3)
	if b := locs.Blocks[1].Block; b.Id != old.Id || b.GenStamp <= old.GenStamp || b.Length != 123 {
		t.Fatalf("the cut block is %v, was %v: want the same id, a newer stamp, 123 bytes", b, old)
	}

	// HDFS's refusals, and nothing changed by them.
	for _, r := range []struct {
		length int64
		kind   errs.Kind
		msg    string
	}{
		{cut + 1, errs.Invalid, "Cannot truncate to a larger file size"},
		{-1, errs.Invalid, "negative"},
	} {
		if _, err := cl.Truncate(ctxT(t), p, r.length); errs.KindOf(err) != r.kind || !bytes.Contains([]byte(err.Error()), []byte(r.msg)) {
			t.Fatalf("truncate to %d: %v, want %v %q", r.length, err, r.kind, r.msg)
		}
	}
	if _, err := cl.Truncate(ctxT(t), "/shared", 0); errs.KindOf(err) != errs.IsDir {
		t.Fatalf("truncate of a directory: %v", err)
	}
	bob := clientAs(t, c, "bob")
	if err := cl.SetPermission(ctxT(t), p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Truncate(ctxT(t), p, 0); errs.KindOf(err) != errs.Permission {
		t.Fatalf("bob's truncate: %v", err)
	}
	w := create(t, cl, "/shared/open")
	mustWrite(t, w, data[:100])
	if _, err := cl.Truncate(ctxT(t), "/shared/open", 0); errs.KindOf(err) != errs.Precondition {
		t.Fatalf("truncate of an open file: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readBack(t, cl, p, data[:cut])

	// To zero: done.
	if done, err := cl.Truncate(ctxT(t), p, 0); err != nil || !done {
		t.Fatalf("truncate to 0: %v %v", done, err)
	}
	readBack(t, cl, p, nil)
}

// TestXAttrsAndTimes: attributes and times are replicated (every
// namenode's namespace hash agrees) and served by followers.
func TestXAttrsAndTimes(t *testing.T) {
	c, cl := startLeaseCluster(t)
	writeFile(t, cl, "/shared/x", randBytes(10))
	if err := cl.SetXAttr(ctxT(t), "/shared/x", "User.color", []byte("blue"), 3); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetXAttr(ctxT(t), "/shared/x", "trusted.t", []byte{0, 1}, 1); err != nil {
		t.Fatal(err) // root is the superuser
	}
	if err := cl.SetXAttr(ctxT(t), "/shared/x", "user.color", []byte("red"), 1); errs.KindOf(err) != errs.Exist {
		t.Fatalf("CREATE of an existing attribute: %v", err)
	}
	if err := cl.SetTimes(ctxT(t), "/shared/x", 1000, 2000); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	bob := clientAs(t, c, "bob")
	xs, err := bob.GetXAttrs(ctxT(t), "/shared/x")
	if err != nil || len(xs) != 1 || xs[0].Name != "user.color" || string(xs[0].Value) != "blue" {
		t.Fatalf("bob sees %v, %v", xs, err)
	}
	if _, err := bob.GetXAttrs(ctxT(t), "/shared/x", "user.nope"); errs.KindOf(err) != errs.NotFound || !bytes.Contains([]byte(err.Error()), []byte(namespace.MsgXAttrNotFound)) {
		t.Fatalf("a missing attribute: %v", err)
	}
	if err := bob.SetXAttr(ctxT(t), "/shared/x", "user.b", nil, 3); errs.KindOf(err) != errs.Permission {
		t.Fatalf("bob sets on root's 0644 file: %v", err)
	}
	all, err := cl.ListXAttrs(ctxT(t), "/shared/x")
	if err != nil || len(all) != 2 || all[0].Name != "trusted.t" {
		t.Fatalf("root lists %v, %v", all, err)
	}
	st, err := bob.Stat(ctxT(t), "/shared/x")
	if err != nil || st.MtimeUnixMs != 1000 || st.AtimeUnixMs != 2000 {
		t.Fatalf("times %v, %v", st, err)
	}
	if err := cl.RemoveXAttr(ctxT(t), "/shared/x", "user.color"); err != nil {
		t.Fatal(err)
	}
	if err := cl.RemoveXAttr(ctxT(t), "/shared/x", "user.color"); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("removing it again: %v", err)
	}
	sd, err := bob.ServerDefaults(ctxT(t))
	if err != nil || sd.BlockSize == 0 || sd.BytesPerChecksum != 512 || sd.ChecksumType != "CRC32C" || sd.Replication != 3 {
		t.Fatalf("server defaults %v, %v", sd, err)
	}
	fs, err := bob.FsStats(ctxT(t))
	if err != nil || fs.Capacity == 0 || fs.Remaining > fs.Capacity || fs.MissingBlocks != 0 {
		t.Fatalf("fs stats %v, %v", fs, err)
	}
}

// TestCopyOnTruncate: a truncate inside a block a snapshot holds copies
// the block (HDFS's copy-on-truncate) instead of cutting it. The live
// file's last block becomes a new block of the cut length on every
// replica, while the snapshot reads back the whole file from the old
// block, whose replicas stay until the snapshot is deleted.
func TestCopyOnTruncate(t *testing.T) {
	c, cl := startLeaseCluster(t)
	data := randBytes(2*blockSize + 300)
	p := "/shared/cot/f"
	writeFile(t, cl, p, data)
	before := waitReplicas(t, cl, p, 3)
	if err := cl.AllowSnapshot(ctxT(t), "/shared/cot"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateSnapshot(ctxT(t), "/shared/cot", "s1"); err != nil {
		t.Fatal(err)
	}
	const cut = blockSize + 123
	old := before.Blocks[1].Block
	done, err := cl.Truncate(ctxT(t), p, cut)
	if err != nil || done {
		t.Fatalf("truncate inside a snapshot's block: done %v, %v", done, err)
	}
	if err := cl.WaitClosed(ctxT(t), p); err != nil {
		t.Fatal(err)
	}
	readBack(t, cl, p, data[:cut])
	checkReplicas(t, c, cl, p, data[:cut], 3)
	locs := waitReplicas(t, cl, p, 3)
	if b := locs.Blocks[1].Block; b.Id == old.Id || b.Length != 123 {
		t.Fatalf("the live file's last block is %v: want a copy of %v with a new id, 123 bytes", b, old)
	}
	readBack(t, cl, "/shared/cot/.snapshot/s1/f", data)
	for _, b := range before.Blocks[1:] {
		if n := replicasOf(c, b.Block.Id); n < 3 {
			t.Fatalf("the snapshot's block %d has %d replicas left, want 3", b.Block.Id, n)
		}
	}
	if err := c.WaitConverged(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// Without the snapshot, only the old blocks' replicas go.
	if err := cl.DeleteSnapshot(ctxT(t), "/shared/cot", "s1"); err != nil {
		t.Fatal(err)
	}
	var gone []uint64
	for _, b := range before.Blocks[1:] {
		gone = append(gone, b.Block.Id)
	}
	waitReplicasGone(ctxT(t), t, c, gone)
	readBack(t, cl, p, data[:cut])
}
