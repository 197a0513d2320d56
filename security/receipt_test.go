package security

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestReceipts: a receipt checks out only under the key issued to the
// datanode it names, for exactly the facts it was made of.
func TestReceipts(t *testing.T) {
	keys := NewReceiptKeys(prometheus.NewRegistry())
	k1, err := keys.Issue("dn1")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := keys.Issue("dn2")
	if err != nil {
		t.Fatal(err)
	}
	facts := ReplicaFacts{Datanode: "dn1", BlockID: 7, GenStamp: 3, Length: 1024, Inode: 40, CRC: 0xdeadbeef}
	mac := k1.Sign(facts)
	other := func(f func(*ReplicaFacts)) ReplicaFacts { g := facts; f(&g); return g }
	stranger, err := NewReceiptKey()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		facts  ReplicaFacts
		keyID  uint64
		mac    []byte
		ok     bool
		result string
	}{
		{"the receipt", facts, k1.ID, mac, true, "accepted"},
		{"another block", other(func(f *ReplicaFacts) { f.BlockID++ }), k1.ID, mac, false, "refused"},
		{"another generation stamp", other(func(f *ReplicaFacts) { f.GenStamp++ }), k1.ID, mac, false, "refused"},
		{"another length", other(func(f *ReplicaFacts) { f.Length-- }), k1.ID, mac, false, "refused"},
		{"another inode", other(func(f *ReplicaFacts) { f.Inode++ }), k1.ID, mac, false, "refused"},
		{"another CRC", other(func(f *ReplicaFacts) { f.CRC ^= 1 }), k1.ID, mac, false, "refused"},
		{"a truncated MAC", facts, k1.ID, mac[:16], false, "refused"},
		{"no MAC", facts, k1.ID, nil, false, "refused"},
		// dn2 vouching for dn1's replica, under dn2's own key.
		{"made by another datanode", facts, k2.ID, k2.Sign(facts), false, "other"},
		{"naming another datanode", other(func(f *ReplicaFacts) { f.Datanode = "dn2" }), k2.ID, k1.Sign(other(func(f *ReplicaFacts) { f.Datanode = "dn2" })), false, "refused"},
		{"a key never issued", facts, stranger.ID, stranger.Sign(facts), false, "other"},
		{"an unknown datanode", other(func(f *ReplicaFacts) { f.Datanode = "dn9" }), k1.ID, mac, false, "other"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(keys.checked.WithLabelValues(tc.result))
			if got := keys.Check(tc.facts, tc.keyID, tc.mac); got != tc.ok {
				t.Fatalf("Check = %v, want %v", got, tc.ok)
			}
			if d := testutil.ToFloat64(keys.checked.WithLabelValues(tc.result)) - before; d != 1 {
				t.Fatalf("result %q counted %v times, want once", tc.result, d)
			}
		})
	}
	// A new registration's key replaces the old one: receipts under the
	// old key stop checking out.
	if _, err := keys.Issue("dn1"); err != nil {
		t.Fatal(err)
	}
	if keys.Check(facts, k1.ID, mac) {
		t.Fatal("a receipt under a replaced key still checks out")
	}
	if _, err := ReceiptKeyFrom(1, make([]byte, 31)); err == nil {
		t.Fatal("a 31-byte receipt key was taken")
	}
	if k, err := ReceiptKeyFrom(k1.ID, k1.Bytes()); err != nil || !k.Valid(facts, mac) {
		t.Fatalf("a key rebuilt from its bytes: %v", err)
	}
}
