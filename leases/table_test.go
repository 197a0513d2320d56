package leases

import (
	"bytes"
	"slices"
	"testing"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

func TestTable(t *testing.T) {
	a := namespace.Writer{Client: "c1", User: "alice"}
	b := namespace.Writer{Client: "c2", User: "bob"}
	tb := New()
	tb.Add(10, a, 1000)
	tb.Add(11, a, 1500)
	tb.Add(20, b, 2000)
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"renew by holder", tb.Renew(a, 3000), 2},
		{"renew by stranger", tb.Renew(namespace.Writer{Client: "c9", User: "alice"}, 3000), 0},
		{"renew with another user", tb.Renew(namespace.Writer{Client: "c1", User: "mallory"}, 9000), 0},
		{"renewed", tb.RenewedMs(10), int64(3000)},
		{"not expired", tb.Expired(10, 3500, 1000), false},
		{"expired", tb.Expired(20, 3500, 1000), true},
		{"no lease is expired", tb.Expired(99, 0, 1000), true},
		{"files", files(tb), 3},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	tb.StartRecovery(20, Recovery{ID: 7, Block: namespace.Block{ID: 5, GenStamp: 3, Length: 9}, Primary: "dn1", Replicas: []string{"dn1", "dn2"}, StartedMs: 4000})
	var buf bytes.Buffer
	if _, err := tb.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if back.Hash() != tb.Hash() {
		t.Fatal("hash differs after a round trip")
	}
	if r, ok := back.Recovering(20); !ok || r.Primary != "dn1" || len(r.Replicas) != 2 || r.Truncate {
		t.Fatalf("recovery after round trip: %+v %v", r, ok)
	}
	// A truncate's recovery keeps its mark; the table without it keeps
	// its bytes (the mark is a bit of the replica count).
	plain := slices.Clone(buf.Bytes())
	tr := Recovery{ID: 8, Block: namespace.Block{ID: 6, GenStamp: 3, Length: 4}, Primary: "dn2", Replicas: []string{"dn2"}, StartedMs: 4100, Truncate: true}
	tb.StartRecovery(10, tr)
	var tbuf bytes.Buffer
	if _, err := tb.WriteTo(&tbuf); err != nil {
		t.Fatal(err)
	}
	tback, err := Read(bytes.NewReader(tbuf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := tback.Recovering(10); !ok || !r.Truncate || r.Block.Length != 4 || len(r.Replicas) != 1 {
		t.Fatalf("truncate recovery after round trip: %+v %v", r, ok)
	}
	if r, _ := tback.Recovering(20); r.Truncate {
		t.Fatal("the mark spread to another recovery")
	}
	// A copy-on-truncate's recovery keeps the block it copies from.
	cp := tr
	cp.Block.ID, cp.CopyFrom = 9, namespace.Block{ID: 6, GenStamp: 3, Length: 7}
	tb.StartRecovery(30, cp)
	var cbuf bytes.Buffer
	if _, err := tb.WriteTo(&cbuf); err != nil {
		t.Fatal(err)
	}
	cback, err := Read(bytes.NewReader(cbuf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := cback.Recovering(30); !ok || r.CopyFrom != cp.CopyFrom || r.Block.ID != 9 || !r.Truncate || len(r.Replicas) != 1 {
		t.Fatalf("copy-on-truncate recovery after round trip: %+v %v", r, ok)
	}
	if r, _ := cback.Recovering(10); r.CopyFrom.ID != 0 {
		t.Fatal("the copy's source spread to another recovery")
	}
	tb.Remove(30)
	tb.Remove(10)
	tb.Add(10, a, 1000)
	tb.Renew(a, 3000)
	var again bytes.Buffer
	if _, err := tb.WriteTo(&again); err != nil || !bytes.Equal(again.Bytes(), plain) {
		t.Fatalf("without a truncate the encoding changed (%v)", err)
	}
	for n := 0; n < buf.Len(); n += 7 {
		if _, err := Read(bytes.NewReader(buf.Bytes()[:n])); errs.KindOf(err) != errs.Corrupt {
			t.Fatalf("truncated at %d: %v", n, err)
		}
	}
	tb.Remove(20)
	if _, ok := tb.Recovering(20); ok || files(tb) != 2 || len(tb.Holders()) != 1 {
		t.Fatalf("after remove: %d files, %d holders", files(tb), len(tb.Holders()))
	}
	tb.Add(11, b, 5000) // taken over
	hs := tb.Holders()
	if len(hs) != 2 || hs[1].Client != "c2" || !slices.Contains(hs[1].Files, 11) {
		t.Fatalf("takeover: holders %+v", hs)
	}
	tb.Prune(func(id namespace.ID, _ string) bool { return id != 10 })
	if files(tb) != 1 {
		t.Fatalf("prune left %d files", files(tb))
	}
}

func files(t *Table) int {
	_, n, _ := t.Counts()
	return n
}
