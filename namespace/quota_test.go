package namespace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/blockfs/blockfs/errs"
)

// quotaTree builds, as the system:
//
//	/q        quota set by each case
//	/q/d      directory
//	/q/f      complete, one block of 100 bytes (CRC), replication 3
//	/q/open   under construction, no blocks
//	/q/short  complete, one block of 10 bytes (CRC)
//	/o/sub    directory with /o/sub/g, a complete file of one 128-byte block
//	/o/e      empty directory
func quotaTree(t testing.TB) *Tree {
	t.Helper()
	tr := New(DefaultLimits(), super, "supergroup")
	for _, d := range []string{"/q/d", "/o/sub", "/o/e"} {
		must(t, tr.Mkdirs(mustPath(d), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 1}))
	}
	closed := func(p string, n uint64) {
		fi := mustCreate(t, tr, p, "")
		b := mustAdd(t, tr, p, fi.ID, nil)
		b.Length = n
		if _, err := tr.Complete(mustPath(p), fi.ID, []Block{b.WithCRC(7)}, 3); err != nil {
			t.Fatal(err)
		}
	}
	closed("/q/f", 100)
	closed("/q/short", 10)
	closed("/o/sub/g", bs)
	mustCreate(t, tr, "/q/open", "")
	return tr
}

// fataler is what testing.TB and *rapid.T share.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func rmust(t fataler, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// quotaUse returns p's names and space from QuotaUsage.
func quotaUse(t fataler, tr *Tree, p string) (int64, int64) {
	t.Helper()
	u, err := tr.As(nil, "test").QuotaUsage(mustPath(p))
	rmust(t, err)
	return u.FileAndDirectoryCount, u.SpaceConsumed
}

func TestQuotaRefusals(t *testing.T) {
	// /q holds /q, d, f, open, short: 5 names; 3×100 + 3×10 bytes.
	const names, space = 5, 330
	open := func(tr *Tree) FileInfo { return mustStat(t, tr, "/q/open") }
	cases := []struct {
		name   string
		ns, ds int64 // /q's quotas (QuotaReset: none)
		at     string
		op     func(tr *Tree) error
		want   string // "" means allowed
	}{
		{"mkdir at the limit", names + 1, QuotaReset, "/q", func(tr *Tree) error {
			return tr.Mkdirs(mustPath("/q/n"), MkdirsOpts{Perm: 0755})
		}, ""},
		{"mkdir past the limit", names, QuotaReset, "/q", func(tr *Tree) error {
			return tr.Mkdirs(mustPath("/q/n"), MkdirsOpts{Perm: 0755})
		}, NSQuotaExceeded},
		{"mkdir -p counts every new directory", names + 2, QuotaReset, "/q", func(tr *Tree) error {
			return tr.Mkdirs(mustPath("/q/x/y/z"), MkdirsOpts{Perm: 0755, Parents: true})
		}, NSQuotaExceeded},
		{"mkdir in a nested directory", names, QuotaReset, "/q", func(tr *Tree) error {
			return tr.Mkdirs(mustPath("/q/d/n"), MkdirsOpts{Perm: 0755})
		}, NSQuotaExceeded},
		{"create past the limit", names, QuotaReset, "/q", func(tr *Tree) error {
			_, _, err := tr.Create(mustPath("/q/g"), CreateOpts{Perm: 0644, Replication: 3, BlockSize: bs})
			return err
		}, NSQuotaExceeded},
		{"create with parents", names + 2, QuotaReset, "/q", func(tr *Tree) error {
			_, _, err := tr.Create(mustPath("/q/a/b/g"), CreateOpts{Perm: 0644, Replication: 3, BlockSize: bs, CreateParent: true})
			return err
		}, NSQuotaExceeded},
		{"overwrite replaces a name", names, QuotaReset, "/q", func(tr *Tree) error {
			_, _, err := tr.Create(mustPath("/q/f"), CreateOpts{Perm: 0644, Replication: 3, BlockSize: bs, Overwrite: true})
			return err
		}, ""},
		{"addBlock charges a full block", QuotaReset, space + 3*bs - 1, "/q", func(tr *Tree) error {
			_, _, err := tr.AddBlock(mustPath("/q/open"), open(tr).ID, nil, tr.NextBlockID(), tr.NextGenStamp(), 5)
			return err
		}, DSQuotaExceeded},
		{"addBlock at the limit", QuotaReset, space + 3*bs, "/q", func(tr *Tree) error {
			_, _, err := tr.AddBlock(mustPath("/q/open"), open(tr).ID, nil, tr.NextBlockID(), tr.NextGenStamp(), 5)
			return err
		}, ""},
		{"second addBlock counts the first at its length", QuotaReset, space + 3*(60+bs), "/q", func(tr *Tree) error {
			// quotaTree's /q/open gets a first block (prepared below).
			bl := blocksOf(t, tr, "/q/open")
			prev := bl[0]
			prev.Length = 61
			_, err := tr.As(nil, "test").AddBlock(mustPath("/q/open"), open(tr).ID, &prev, 5)
			return err
		}, DSQuotaExceeded},
		{"second addBlock within the limit", QuotaReset, space + 3*(60+bs), "/q", func(tr *Tree) error {
			prev := blocksOf(t, tr, "/q/open")[0]
			prev.Length = 60
			_, err := tr.As(nil, "test").AddBlock(mustPath("/q/open"), open(tr).ID, &prev, 5)
			return err
		}, ""},
		{"append reopening a short block", QuotaReset, space + 3*(bs-10) - 1, "/q", func(tr *Tree) error {
			_, _, err := tr.As(nil, "test").AppendLast(mustPath("/q/short"), tr.NextGenStamp(), 5)
			return err
		}, DSQuotaExceeded},
		{"append of a new block charges nothing yet", QuotaReset, space, "/q", func(tr *Tree) error {
			_, err := tr.Append(mustPath("/q/short"), 5)
			return err
		}, ""},
		{"rename a tree in", names + 1, QuotaReset, "/q", func(tr *Tree) error {
			return tr.Rename(mustPath("/o/sub"), mustPath("/q/sub"), 5)
		}, NSQuotaExceeded},
		{"rename a file's space in", QuotaReset, space + 3*bs - 1, "/q", func(tr *Tree) error {
			return tr.Rename(mustPath("/o/sub/g"), mustPath("/q/g"), 5)
		}, DSQuotaExceeded},
		{"rename within the quota's tree", names, 0, "/q", func(tr *Tree) error {
			return tr.Rename(mustPath("/q/f"), mustPath("/q/d/f"), 5)
		}, ""},
		{"rename out", 1, 0, "/q", func(tr *Tree) error {
			return tr.Rename(mustPath("/q/f"), mustPath("/o/f"), 5)
		}, ""},
		{"setReplication up", QuotaReset, space + 99, "/q", func(tr *Tree) error {
			return tr.SetReplication(mustPath("/q/f"), 4)
		}, DSQuotaExceeded},
		{"setReplication down under a quota passed", QuotaReset, 0, "/q", func(tr *Tree) error {
			return tr.SetReplication(mustPath("/q/f"), 2)
		}, ""},
		{"quota on a nested directory", 1, QuotaReset, "/q/d", func(tr *Tree) error {
			_, _, err := tr.Create(mustPath("/q/d/g"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: bs})
			return err
		}, NSQuotaExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := quotaTree(t)
			if strings.HasPrefix(c.name, "second addBlock") {
				mustAdd(t, tr, "/q/open", open(tr).ID, nil)
			}
			must(t, tr.SetQuota(mustPath(c.at), c.ns, c.ds))
			before, nsBefore, dsBefore := tr.Hash(), 0, 0
			{
				n, d := quotaUse(t, tr, c.at)
				nsBefore, dsBefore = int(n), int(d)
			}
			err := c.op(tr)
			if c.want == "" {
				must(t, err)
			} else {
				wantErr(t, err, errs.Exhausted, c.want, "is exceeded")
				if tr.Hash() != before {
					t.Fatal("a refused call changed the tree")
				}
				if n, d := quotaUse(t, tr, c.at); int(n) != nsBefore || int(d) != dsBefore {
					t.Fatalf("usage after a refusal %d, %d; want %d, %d", n, d, nsBefore, dsBefore)
				}
			}
			must(t, tr.CheckQuotas())
		})
	}
}

func TestSetQuota(t *testing.T) {
	tr := quotaTree(t)
	q := mustPath("/q")
	cases := []struct {
		name   string
		c      *Caller
		p      string
		ns, ds int64
		kind   errs.Kind // 0: success
		want   ContentSummary
	}{
		{"a user is refused", alice, "/q", 10, 10, errs.Permission, ContentSummary{Quota: -1, SpaceQuota: -1}},
		{"a supergroup member sets", carol, "/q", 10, QuotaDontSet, 0, ContentSummary{Quota: 10, SpaceQuota: -1}},
		{"don't set keeps, the superuser sets space", root, "/q", QuotaDontSet, 1 << 30, 0, ContentSummary{Quota: 10, SpaceQuota: 1 << 30}},
		{"zero is a quota", root, "/q", 0, QuotaDontSet, 0, ContentSummary{Quota: 0, SpaceQuota: 1 << 30}},
		{"reset clears one", root, "/q", QuotaReset, QuotaDontSet, 0, ContentSummary{Quota: -1, SpaceQuota: 1 << 30}},
		{"below -1 is invalid", root, "/q", -2, QuotaDontSet, errs.Invalid, ContentSummary{Quota: -1, SpaceQuota: 1 << 30}},
		{"a file is refused", root, "/q/f", 5, 5, errs.NotFound, ContentSummary{Quota: -1, SpaceQuota: 1 << 30}},
		{"a missing directory", root, "/q/zz", 5, 5, errs.NotFound, ContentSummary{Quota: -1, SpaceQuota: 1 << 30}},
		{"reset both removes the quota", root, "/q", QuotaReset, QuotaReset, 0, ContentSummary{Quota: -1, SpaceQuota: -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tr.As(c.c, "SetQuota").SetQuota(mustPath(c.p), c.ns, c.ds)
			if c.kind == 0 {
				must(t, err)
			} else {
				wantErr(t, err, c.kind)
			}
			cs, err := tr.As(nil, "test").ContentSummary(q)
			must(t, err)
			want := c.want
			want.Length, want.FileCount, want.DirectoryCount, want.SpaceConsumed = 110, 3, 2, 3*(100+10)
			if cs != want {
				t.Fatalf("content summary %+v, want %+v", cs, want)
			}
			must(t, tr.CheckQuotas())
		})
	}
	if got := len(tr.quotaDirs()); got != 0 {
		t.Fatalf("%d directories keep a quota after both were reset", got)
	}
}

// TestQuotaUsageProperty: after any sequence of operations, refused or
// not, the usage counters equal a full recount, a refused operation
// changes nothing, and the counters survive an image round trip.
func TestQuotaUsageProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr := New(DefaultLimits(), super, "supergroup")
		dirs := []string{"/a", "/a/b", "/a/b/c", "/d", "/d/e"}
		for _, d := range dirs {
			rmust(rt, tr.Mkdirs(mustPath(d), MkdirsOpts{Perm: 0755, Parents: true}))
		}
		// Quotas from the start, tight enough to refuse some calls.
		rmust(rt, tr.SetQuota(mustPath("/a"), rapid.Int64Range(3, 15).Draw(rt, "ns0"), rapid.Int64Range(0, 3000).Draw(rt, "ds0")))
		rmust(rt, tr.SetQuota(mustPath("/a/b"), QuotaReset, rapid.Int64Range(0, 2000).Draw(rt, "ds1")))
		names := []string{"x", "y"}
		pathGen := rapid.Custom(func(t *rapid.T) string {
			return rapid.SampledFrom(dirs).Draw(t, "dir") + "/" + rapid.SampledFrom(names).Draw(t, "name")
		})
		anyPath := rapid.OneOf(rapid.SampledFrom(dirs), pathGen)
		s := tr.As(nil, "test")
		var made []string // files created
		for i := range rapid.IntRange(20, 100).Draw(rt, "steps") {
			p := anyPath.Draw(rt, fmt.Sprintf("path%d", i))
			if len(made) > 0 && rapid.Bool().Draw(rt, "recent") {
				p = rapid.SampledFrom(made).Draw(rt, "made") // most ops need a file
			}
			before := tr.Hash()
			var err error
			switch op := rapid.IntRange(0, 13).Draw(rt, fmt.Sprintf("op%d", i)); op {
			case 0:
				err = tr.SetQuota(mustPath(rapid.SampledFrom(dirs).Draw(rt, "qdir")),
					rapid.Int64Range(-1, 12).Draw(rt, "ns"), rapid.Int64Range(-1, 3000).Draw(rt, "ds"))
			case 1:
				err = tr.Mkdirs(mustPath(p), MkdirsOpts{Perm: 0755, Parents: rapid.Bool().Draw(rt, "parents")})
			case 2:
				_, _, err = tr.Create(mustPath(p), CreateOpts{Perm: 0644, Replication: uint32(rapid.IntRange(1, 3).Draw(rt, "repl")),
					BlockSize: bs, Overwrite: rapid.Bool().Draw(rt, "overwrite"), CreateParent: rapid.Bool().Draw(rt, "mkparent")})
				if err == nil {
					made = append(made, p)
				}
			case 3, 4: // addBlock, with the previous block at a random length
				err = withOpen(tr, p, func(fi FileInfo, bl []Block) error {
					var prev *Block
					if len(bl) > 0 {
						b := bl[len(bl)-1]
						b.Length = max(b.Length, uint64(rapid.IntRange(0, bs).Draw(rt, "len")))
						prev = &b
					}
					_, err := s.AddBlock(mustPath(p), fi.ID, prev, 1)
					return err
				})
			case 5:
				err = withOpen(tr, p, func(fi FileInfo, bl []Block) error {
					bl = append([]Block(nil), bl...)
					if len(bl) > 0 {
						bl[len(bl)-1].Length = max(bl[len(bl)-1].Length, uint64(rapid.IntRange(0, bs).Draw(rt, "len")))
					}
					_, err := tr.Complete(mustPath(p), fi.ID, bl, 1)
					return err
				})
			case 6:
				err = withOpen(tr, p, func(fi FileInfo, bl []Block) error {
					if len(bl) == 0 {
						return nil
					}
					return tr.AbandonBlock(mustPath(p), fi.ID, bl[len(bl)-1])
				})
			case 7:
				_, err = tr.Delete(mustPath(p), true, 1)
			case 8:
				err = tr.Rename(mustPath(p), mustPath(anyPath.Draw(rt, "dst")), 1)
			case 9:
				if rapid.Bool().Draw(rt, "reopen") {
					_, _, err = s.AppendLast(mustPath(p), tr.NextGenStamp(), 1)
				} else {
					_, err = tr.Append(mustPath(p), 1)
				}
			case 10:
				err = tr.SetReplication(mustPath(p), uint32(rapid.IntRange(1, 4).Draw(rt, "repl")))
			case 11:
				err = withOpen(tr, p, func(fi FileInfo, bl []Block) error {
					if len(bl) == 0 {
						return nil
					}
					b := bl[len(bl)-1]
					b.Length = uint64(rapid.IntRange(0, bs).Draw(rt, "len"))
					_, err := s.Fsync(mustPath(p), fi.ID, b, 1)
					return err
				})
			case 12: // lease recovery of an empty file or last block
				err = withOpen(tr, p, func(fi FileInfo, bl []Block) error {
					_, _, err := tr.CloseEmpty("test", fi.ID, 1)
					return err
				})
			case 13: // a block recovery's commit
				err = withOpen(tr, p, func(fi FileInfo, bl []Block) error {
					if len(bl) == 0 {
						return nil
					}
					last := bl[len(bl)-1]
					r := Recovery{Block: last, RecoveryID: tr.NextGenStamp(), Length: max(last.Length, uint64(rapid.IntRange(0, bs).Draw(rt, "len")))}
					tr.AllocGenStamp()
					before = tr.Hash() // the allocation is not the commit's
					_, _, err := tr.CommitRecovery("test", fi.ID, r, 1)
					return err
				})
			}
			if err != nil && tr.Hash() != before {
				rt.Fatalf("refused op (%v) changed the tree", err)
			}
			if err := tr.CheckQuotas(); err != nil {
				rt.Fatal(err)
			}
		}
		var img bytes.Buffer
		rmust(rt, tr.WriteImage(&img))
		back, err := ReadImage(&img)
		rmust(rt, err)
		rmust(rt, back.CheckQuotas())
		if back.Hash() != tr.Hash() {
			rt.Fatal("image round trip changed the hash")
		}
		for _, d := range tr.quotaDirs() {
			p := pathOf(d)
			n1, d1 := quotaUse(rt, tr, p)
			n2, d2 := quotaUse(rt, back, p)
			if n1 != n2 || d1 != d2 || back.inodes.get(d.id).quota() == nil {
				rt.Fatalf("%s: usage %d, %d before the round trip, %d, %d after", p, n1, d1, n2, d2)
			}
		}
	})
}

// withOpen runs f on p when it is a file under construction.
func withOpen(tr *Tree, p string, f func(FileInfo, []Block) error) error {
	fi, bl, err := tr.File(mustPath(p))
	if err != nil || fi.State != UnderConstruction {
		return err
	}
	return f(fi, bl)
}

func TestQuotaImage(t *testing.T) {
	tr := quotaTree(t)
	must(t, tr.SetQuota(mustPath("/q"), 100, 1<<20))
	must(t, tr.SetQuota(mustPath("/o/sub"), QuotaReset, 500))
	img := image(t, tr)
	back, err := ReadImage(bytes.NewReader(img))
	must(t, err)
	for _, p := range []string{"/q", "/o/sub"} {
		a, _ := tr.As(nil, "t").QuotaUsage(mustPath(p))
		b, _ := back.As(nil, "t").QuotaUsage(mustPath(p))
		if a != b {
			t.Fatalf("%s: %+v, read back %+v", p, a, b)
		}
	}
	must(t, back.CheckQuotas())
	if back.Hash() != tr.Hash() {
		t.Fatal("hash changed")
	}

	quotas := 0
	stripped := reframe(t, img, func(_ int, typ byte, b []byte) [][]byte {
		if typ == recQuota {
			quotas++
			return nil
		}
		return [][]byte{append([]byte{typ}, b...)}
	})
	if quotas != 2 {
		t.Fatalf("%d QUOTA records, want 2", quotas)
	}
	v3 := bytes.Clone(stripped)
	binary.LittleEndian.PutUint32(v3[8:], imageV3)
	v3 = reframe(t, v3, func(_ int, typ byte, b []byte) [][]byte { return [][]byte{append([]byte{typ}, b...)} })
	old, err := ReadImage(bytes.NewReader(v3))
	must(t, err)
	if n := len(old.quotaDirs()); n != 0 {
		t.Fatalf("a version 3 image read with %d quotas", n)
	}
	if cs, _ := old.As(nil, "t").ContentSummary(mustPath("/q")); cs.Quota != -1 || cs.FileCount != 3 {
		t.Fatalf("version 3 image: %+v", cs)
	}

	// Damaged QUOTA records are Corrupt.
	edit := func(f func(b []byte) [][]byte, ver uint32) []byte {
		c := bytes.Clone(img)
		binary.LittleEndian.PutUint32(c[8:], ver)
		return reframe(t, c, func(_ int, typ byte, b []byte) [][]byte {
			if typ == recQuota {
				return f(b)
			}
			return [][]byte{append([]byte{typ}, b...)}
		})
	}
	rec := func(b []byte) []byte { return append([]byte{recQuota}, b...) }
	bad := map[string][]byte{
		"in a version 3 image": edit(func(b []byte) [][]byte { return [][]byte{rec(b)} }, imageV3),
		"short":                edit(func(b []byte) [][]byte { return [][]byte{rec(b[:16])} }, imageVersion),
		"twice":                edit(func(b []byte) [][]byte { return [][]byte{rec(b), rec(b)} }, imageVersion),
		"wrong directory": edit(func(b []byte) [][]byte {
			binary.LittleEndian.PutUint64(b, 1)
			return [][]byte{rec(b)}
		}, imageVersion),
		"below -1": edit(func(b []byte) [][]byte {
			binary.LittleEndian.PutUint64(b[8:], uint64(1<<64-2))
			return [][]byte{rec(b)}
		}, imageVersion),
	}
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := ReadImage(bytes.NewReader(b))
			wantErr(t, err, errs.Corrupt)
		})
	}
}

// TestQuotaUnderView: quota changes and usage updates while a view is
// open leave the view's image as it was.
func TestQuotaUnderView(t *testing.T) {
	tr := quotaTree(t)
	must(t, tr.SetQuota(mustPath("/q"), 100, QuotaReset))
	want := tr.Hash()
	v := tr.View()
	must(t, tr.SetQuota(mustPath("/q"), 50, 1<<20))
	must(t, tr.SetQuota(mustPath("/o"), 50, QuotaReset))
	must(t, tr.Mkdirs(mustPath("/q/more"), MkdirsOpts{Perm: 0755}))
	var img bytes.Buffer
	must(t, v.Encode(&img))
	v.Close()
	back, err := ReadImage(&img)
	must(t, err)
	if back.Hash() != want {
		t.Fatal("the view's image is not the tree as it was")
	}
	must(t, tr.CheckQuotas())
}
