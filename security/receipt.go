package security

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
)

// Replica receipts. A namenode gives each datanode that registers a
// random key of its own ([ReceiptKeys.Issue]); the datanode, having
// committed a replica, MACs the replica's facts under every key it holds
// and returns the MACs with the write's final ack; the writer hands them
// to Complete; the leader checks each against the key it issued to the
// datanode named and, if it matches, counts the replica as reported. A
// receipt is a report the datanode signed and the client carried, so it
// proves exactly what a report does: a client cannot name a replica no
// datanode committed (it holds no key), a datanode cannot vouch for
// another (each key is its own), and a receipt names one block, one
// generation stamp, one length and CRC, so it cannot be moved to other
// bytes. HMAC-SHA256 costs about a microsecond; an Ed25519 signature per
// replica would cost a datanode and the leader tens.

// ReceiptKeyLen is the length of a receipt key.
const ReceiptKeyLen = 32

// ReceiptKey is one datanode's receipt key from one namenode.
type ReceiptKey struct {
	ID  uint64
	key [ReceiptKeyLen]byte
}

// NewReceiptKey makes a random key with a random id.
func NewReceiptKey() (*ReceiptKey, error) {
	var b [8 + ReceiptKeyLen]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, errs.Wrap(errs.Internal, "security.NewReceiptKey", "", err)
	}
	k := &ReceiptKey{ID: binary.LittleEndian.Uint64(b[:8])}
	copy(k.key[:], b[8:])
	return k, nil
}

// ReceiptKeyFrom is the key id with bytes key, as a registration answer
// carries them.
func ReceiptKeyFrom(id uint64, key []byte) (*ReceiptKey, error) {
	if len(key) != ReceiptKeyLen {
		return nil, errs.Newf(errs.Invalid, "security.ReceiptKeyFrom", "", "receipt key of %d bytes; want %d", len(key), ReceiptKeyLen)
	}
	k := &ReceiptKey{ID: id}
	copy(k.key[:], key)
	return k, nil
}

// Bytes returns the key's bytes, for the registration answer.
func (k *ReceiptKey) Bytes() []byte { return append([]byte(nil), k.key[:]...) }

// ReplicaFacts are what a receipt vouches for: datanode Datanode committed
// block BlockID of inode Inode under GenStamp, Length bytes with CRC32C
// CRC.
type ReplicaFacts struct {
	Datanode                         string
	BlockID, GenStamp, Length, Inode uint64
	CRC                              uint32
}

// receiptMagic starts every MAC input (docs/FORMATS.md "Replica receipts").
const receiptMagic = "BFSRCPT1"

func (f ReplicaFacts) encode() []byte {
	b := make([]byte, 0, len(receiptMagic)+2+len(f.Datanode)+36)
	b = append(b, receiptMagic...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(f.Datanode)))
	b = append(b, f.Datanode...)
	for _, v := range []uint64{f.BlockID, f.GenStamp, f.Length, f.Inode} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return binary.LittleEndian.AppendUint32(b, f.CRC)
}

// Sign returns the receipt MAC of f under k.
func (k *ReceiptKey) Sign(f ReplicaFacts) []byte {
	m := hmac.New(sha256.New, k.key[:])
	m.Write(f.encode())
	return m.Sum(nil)
}

// Valid reports whether mac is k's receipt of f.
func (k *ReceiptKey) Valid(f ReplicaFacts, mac []byte) bool {
	return len(f.Datanode) <= 0xffff && hmac.Equal(k.Sign(f), mac)
}

// ReceiptKeys are the receipt keys one namenode issued, one per datanode
// id (the latest registration's). Safe for concurrent use; checks take no
// lock.
type ReceiptKeys struct {
	m       sync.Map // datanode id -> *ReceiptKey
	checked *prometheus.CounterVec
}

// NewReceiptKeys returns an empty set whose checks are counted on reg as
// blockfs_namenode_receipts_total{result="accepted"|"refused"|"other"}.
func NewReceiptKeys(reg prometheus.Registerer) *ReceiptKeys {
	r := &ReceiptKeys{checked: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "blockfs_namenode_receipts_total",
		Help: "Replica receipts Complete calls carried, by result: accepted (counted as the datanode's report), refused (under the key issued to that datanode, with a MAC that does not match) or other (not under a key this namenode issued to that datanode: another namenode's, or an earlier registration's).",
	}, []string{"result"})}
	reg.MustRegister(r.checked)
	return r
}

// Issue makes datanode's new key, replacing any before it.
func (r *ReceiptKeys) Issue(datanode string) (*ReceiptKey, error) {
	k, err := NewReceiptKey()
	if err != nil {
		return nil, err
	}
	r.m.Store(datanode, k)
	return k, nil
}

// Check reports whether mac, under key keyID, is a receipt of f by the
// datanode it names, with the key issued to that datanode.
func (r *ReceiptKeys) Check(f ReplicaFacts, keyID uint64, mac []byte) bool {
	v, ok := r.m.Load(f.Datanode)
	switch {
	case !ok || v.(*ReceiptKey).ID != keyID:
		r.checked.WithLabelValues("other").Inc()
		return false
	case !v.(*ReceiptKey).Valid(f, mac):
		r.checked.WithLabelValues("refused").Inc()
		return false
	}
	r.checked.WithLabelValues("accepted").Inc()
	return true
}
