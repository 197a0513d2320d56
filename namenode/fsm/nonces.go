package fsm

import (
	"encoding/binary"
	"io"

	"github.com/blockfs/blockfs/errs"
)

// spentNonces are the nonces of the WebHDFS CREATE redirect tokens that a
// Create has used, each kept until its token expires: a datanode replaying
// the token for a second Create is refused on every namenode, a new leader
// included (docs/SECURITY.md, "WebHDFS"). The set is small (a token lives
// a minute), and expiry is decided by the commands' own clock (their
// MtimeUnixMs, set by the leader), so every replica prunes alike.
type spentNonces struct {
	exp map[string]int64 // nonce -> expiry, Unix ms
	// order lists the nonces in the order spent; tokens share one
	// lifetime, so it is nearly the order of expiry, and pruning from its
	// head stops at the first nonce still live.
	order []string
}

func newSpentNonces() *spentNonces { return &spentNonces{exp: map[string]int64{}} }

// check forgets the nonces expired as of now (Unix ms) and refuses nonce
// with an errs.Permission error if a Create already spent it ("" is no
// token, never refused). An expired token never gets here (the authorizer
// refuses it), so a nonce pruned as expired cannot come back.
func (s *spentNonces) check(op, path, nonce string, now int64) error {
	s.prune(now)
	if _, ok := s.exp[nonce]; ok && nonce != "" {
		return errs.New(errs.Permission, op, path, "this WebHDFS redirect token was already used to create the file; ask the namenode for a new one")
	}
	return nil
}

// spend records nonce as used until exp (Unix ms); check refused it
// before, if it was.
func (s *spentNonces) spend(nonce string, exp int64) {
	s.exp[nonce] = exp
	s.order = append(s.order, nonce)
}

// prune forgets the nonces expired by now, from the head of order.
func (s *spentNonces) prune(now int64) {
	i := 0
	for ; i < len(s.order) && s.exp[s.order[i]] < now; i++ {
		delete(s.exp, s.order[i])
	}
	if i > 0 {
		s.order = append(s.order[:0], s.order[i:]...)
	}
}

// writeTo encodes the set in spending order: count uvarint, then per
// nonce its length uvarint, its bytes and its expiry as int64 LE
// (docs/FORMATS.md).
func (s *spentNonces) writeTo(w io.Writer) error {
	b := binary.AppendUvarint(nil, uint64(len(s.order)))
	for _, n := range s.order {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.exp[n]))
	}
	_, err := w.Write(b)
	return err
}

// maxNonceLen bounds one nonce when reading: redirect tokens' are 32 hex
// digits.
const maxNonceLen = 256

// readSpentNonces decodes writeTo's encoding.
func readSpentNonces(r io.ByteReader) (*spentNonces, error) {
	const op = "fsm.readSpentNonces"
	s := newSpentNonces()
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, errs.Wrap(errs.Corrupt, op, "", err)
	}
	for i := uint64(0); i < n; i++ {
		l, err := binary.ReadUvarint(r)
		if err != nil || l > maxNonceLen {
			return nil, errs.Newf(errs.Corrupt, op, "", "nonce %d: bad length (%v)", i, err)
		}
		b := make([]byte, l+8)
		for j := range b {
			if b[j], err = r.ReadByte(); err != nil {
				return nil, errs.Wrap(errs.Corrupt, op, "", err)
			}
		}
		nonce := string(b[:l])
		if _, dup := s.exp[nonce]; dup {
			return nil, errs.Newf(errs.Corrupt, op, "", "nonce %q twice", nonce)
		}
		s.exp[nonce] = int64(binary.LittleEndian.Uint64(b[l:]))
		s.order = append(s.order, nonce)
	}
	return s, nil
}
