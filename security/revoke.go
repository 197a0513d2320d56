package security

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// The replicated deny list (docs/SECURITY.md, "Revoking a certificate").
// An entry revokes one of three things:
//
//   - a serial number (what a CA's CRL lists): every leaf certificate with
//     that serial. The cluster CA issues random 128-bit serials, so a serial
//     names one certificate; during a CA rotation it is matched against
//     leaves of either CA.
//   - a SHA-256 fingerprint of a leaf's DER: exactly that certificate.
//   - an identity (role and name): every certificate that names it, present
//     and future, until the entry is lifted ("this principal is out").
//
// Revoking a stolen certificate by serial or fingerprint leaves a reissued
// certificate for the same name valid; revoking the identity does not.
//
// The namenode's FSM keeps the entries and publishes them as an immutable
// DenyList through a Revocations (an atomic pointer) after every apply and
// restore that changes them; every check is one atomic load and map
// lookups, with no lock.

// ErrRevoked is the cause of every refusal of a revoked certificate or
// identity (errors.Is).
var ErrRevoked = errors.New("revoked")

// Key prefixes of deny-list entries (RevocationKey).
const (
	revokeSerial   = "serial:"
	revokeSHA256   = "sha256:"
	revokeIdentity = "identity:"
)

// Fingerprint is the SHA-256 of cert's DER in lower-case hex: what
// `blockfs-certs fingerprint` prints and `dfs admin revoke --fingerprint`
// takes.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// SerialHex is cert's serial number in lower-case hex without leading
// zeros, the form deny-list entries use.
func SerialHex(cert *x509.Certificate) string { return cert.SerialNumber.Text(16) }

// NormalizeRevoked checks that e names exactly one thing to revoke and
// returns a copy with that thing in canonical form (serial: lower-case hex
// without leading zeros; fingerprint: 64 lower-case hex digits; colons and
// a 0x prefix are accepted on input), and its key: "serial:<hex>",
// "sha256:<hex>" or "identity:<role>/<name>".
func NormalizeRevoked(e *api.RevokedEntry) (*api.RevokedEntry, string, error) {
	const op = "security.NormalizeRevoked"
	out := &api.RevokedEntry{RevokedBy: e.GetRevokedBy(), RevokedUnixMs: e.GetRevokedUnixMs(), Reason: e.GetReason()}
	clean := func(s string) string {
		s = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), ":", ""))
		return strings.TrimPrefix(s, "0x")
	}
	n := 0
	for _, set := range []bool{e.GetSerial() != "", e.GetFingerprint() != "", e.GetRole() != "" || e.GetName() != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, "", errs.New(errs.Invalid, op, "", "name exactly one of a serial, a fingerprint or an identity (role and name)")
	}
	switch {
	case e.GetSerial() != "":
		v, ok := new(big.Int).SetString(clean(e.GetSerial()), 16)
		if !ok || v.Sign() < 0 {
			return nil, "", errs.Newf(errs.Invalid, op, e.GetSerial(), "serial %q is not a hexadecimal number", e.GetSerial())
		}
		out.Serial = v.Text(16)
		return out, revokeSerial + out.Serial, nil
	case e.GetFingerprint() != "":
		f := clean(e.GetFingerprint())
		if b, err := hex.DecodeString(f); err != nil || len(b) != sha256.Size {
			return nil, "", errs.Newf(errs.Invalid, op, e.GetFingerprint(), "fingerprint %q is not a SHA-256 in hex", e.GetFingerprint())
		}
		out.Fingerprint = f
		return out, revokeSHA256 + f, nil
	}
	r, err := ParseRole(e.GetRole())
	if err != nil {
		return nil, "", errs.Wrap(errs.Invalid, op, e.GetRole(), err)
	}
	if err := ValidateName(e.GetName()); err != nil {
		return nil, "", err
	}
	out.Role, out.Name = r.String(), e.GetName()
	return out, revokeIdentity + out.Role + "/" + out.Name, nil
}

// DenyList is one immutable reading of the deny list.
type DenyList struct {
	serials map[string]*api.RevokedEntry
	prints  map[[sha256.Size]byte]*api.RevokedEntry
	ids     map[Identity]*api.RevokedEntry
}

// NewDenyList builds a DenyList of entries, which must be normalized
// (NormalizeRevoked); others are skipped. It keeps the entries: the
// caller must not change them.
func NewDenyList(entries []*api.RevokedEntry) *DenyList {
	d := &DenyList{serials: map[string]*api.RevokedEntry{}, prints: map[[sha256.Size]byte]*api.RevokedEntry{}, ids: map[Identity]*api.RevokedEntry{}}
	for _, e := range entries {
		switch {
		case e.Serial != "":
			d.serials[e.Serial] = e
		case e.Fingerprint != "":
			var k [sha256.Size]byte
			if b, err := hex.DecodeString(e.Fingerprint); err == nil && len(b) == len(k) {
				copy(k[:], b)
				d.prints[k] = e
			}
		default:
			if r, err := ParseRole(e.Role); err == nil {
				d.ids[Identity{Role: r, Name: e.Name}] = e
			}
		}
	}
	return d
}

// Len is the number of entries.
func (d *DenyList) Len() int {
	if d == nil {
		return 0
	}
	return len(d.serials) + len(d.prints) + len(d.ids)
}

// Check refuses a caller that the list revokes: its identity id, or its
// leaf certificate (nil under simple authentication) by serial or
// fingerprint. The error is Unauthenticated, wraps ErrRevoked and says
// which entry, who revoked it and when. A nil list revokes nothing.
func (d *DenyList) Check(leaf *x509.Certificate, id Identity) error {
	if d.Len() == 0 {
		return nil
	}
	// The message is built only on a match: a caller that is not revoked
	// costs the lookups and nothing else.
	var what string
	e := d.ids[id]
	if e != nil {
		what = "identity " + id.String()
	}
	if e == nil && leaf != nil && len(d.serials) > 0 {
		s := SerialHex(leaf)
		if e = d.serials[s]; e != nil {
			what = "certificate serial " + s
		}
	}
	if e == nil && leaf != nil && len(d.prints) > 0 {
		sum := sha256.Sum256(leaf.Raw)
		if e = d.prints[sum]; e != nil {
			what = "certificate sha256 " + hex.EncodeToString(sum[:])
		}
	}
	if e == nil {
		return nil
	}
	msg := what + " is revoked by " + e.RevokedBy + " at " + time.UnixMilli(e.RevokedUnixMs).UTC().Format(time.RFC3339)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return &errs.Error{Kind: errs.Unauthenticated, Op: "security.DenyList.Check", Path: id.Name, Msg: msg, Err: ErrRevoked}
}

// Revocations publishes the current DenyList to the checks on every
// handshake and call. The zero value revokes nothing; a nil *Revocations
// is valid and revokes nothing.
type Revocations struct{ p atomic.Pointer[DenyList] }

// Load returns the current list (nil: none).
func (r *Revocations) Load() *DenyList {
	if r == nil {
		return nil
	}
	return r.p.Load()
}

// Store makes d the current list.
func (r *Revocations) Store(d *DenyList) { r.p.Store(d) }

// Check is the current list's Check.
func (r *Revocations) Check(leaf *x509.Certificate, id Identity) error {
	return r.Load().Check(leaf, id)
}

// leafOf returns the verified leaf certificate of a TLS peer, or nil.
func leafOf(chains [][]*x509.Certificate) *x509.Certificate {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return nil
	}
	return chains[0][0]
}
