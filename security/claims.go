package security

import (
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/blockfs/blockfs/errs"
)

// Claims is what a verified token grants.
type Claims struct {
	User     string // sub
	Inode    uint64 // ino
	Access   Access // acc
	HasBlock bool   // the token is scoped to one block (blk and gs present)
	BlockID  uint64 // blk
	GenStamp uint64 // gs
	// Files is bn: the token covers files Inode+i with block BlockID+i
	// (stamp GenStamp) for i < Files, PutFile's files prepared in one run
	// (1 when absent: one block of one inode).
	Files     uint64
	KID       string    // header kid: the key that signed it
	IssuedAt  time.Time // iat
	NotBefore time.Time // nbf
	ExpiresAt time.Time // exp
}

// Request is what a datanode operation needs a token to cover.
type Request struct {
	Inode    uint64
	BlockID  uint64
	GenStamp uint64
	Access   Access // the modes needed (e.g. Read, or Write)
}

// wireClaims is the JWT payload. Field names are documented in
// docs/FORMATS.md and must not change.
type wireClaims struct {
	jwt.RegisteredClaims
	Inode    *uint64 `json:"ino,omitempty"`
	Access   string  `json:"acc,omitempty"`
	BlockID  *uint64 `json:"blk,omitempty"`
	GenStamp *uint64 `json:"gs,omitempty"`
	Files    uint64  `json:"bn,omitempty"`
}

// MaxFiles bounds a token's bn claim.
const MaxFiles = 1 << 10

// toClaims checks the payload's shape (every required claim present and
// well formed) and converts it. It does not check times or scope.
func (w *wireClaims) toClaims(kid string) (Claims, error) {
	bad := func(msg string) (Claims, error) {
		return Claims{}, errs.New(errs.Unauthenticated, "security.Verifier.Verify", "", "malformed claims: "+msg)
	}
	if w.Subject == "" {
		return bad("no sub")
	}
	if w.Inode == nil {
		return bad("no ino")
	}
	if w.ExpiresAt == nil || w.NotBefore == nil || w.IssuedAt == nil {
		return bad("missing exp, nbf or iat")
	}
	acc, err := ParseAccess(w.Access)
	if err != nil {
		return bad("bad acc")
	}
	if (w.BlockID == nil) != (w.GenStamp == nil) {
		return bad("blk and gs must come together")
	}
	if acc&Write != 0 && w.BlockID == nil {
		return bad("write token without blk")
	}
	if w.Files != 0 && (w.BlockID == nil || w.Files > MaxFiles || *w.BlockID+w.Files < *w.BlockID || *w.Inode+w.Files < *w.Inode) {
		return bad("bn without blk, or past its bound")
	}
	c := Claims{
		User:      w.Subject,
		Inode:     *w.Inode,
		Access:    acc,
		KID:       kid,
		IssuedAt:  w.IssuedAt.Time,
		NotBefore: w.NotBefore.Time,
		ExpiresAt: w.ExpiresAt.Time,
	}
	if w.BlockID != nil {
		c.HasBlock, c.BlockID, c.GenStamp, c.Files = true, *w.BlockID, *w.GenStamp, max(w.Files, 1)
	}
	if !c.NotBefore.Before(c.ExpiresAt) {
		return bad("nbf not before exp")
	}
	return c, nil
}

func newWireClaims(user string, inode uint64, acc Access, iat, exp time.Time) *wireClaims {
	ino := inode
	return &wireClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   user,
			IssuedAt:  jwt.NewNumericDate(iat),
			NotBefore: jwt.NewNumericDate(iat),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
		Inode:  &ino,
		Access: acc.String(),
	}
}

// copyPrefix starts the subject of a copy token: the namenode orders a
// replica copied to named datanodes, and only those may accept it.
const copyPrefix = "copy:"

// CopySubject is the token subject of a copy token for the datanodes
// targets: "copy:" and their ids joined by commas.
func CopySubject(targets []string) string { return copyPrefix + strings.Join(targets, ",") }

// CopyTargets reports whether a copy token with subject sub names datanode.
func CopyTargets(sub, datanode string) bool { return names(sub, copyPrefix, datanode) }

// recoverPrefix starts the subject of a recovery token: the datanodes
// holding replicas of the block under recovery.
const recoverPrefix = "recover:"

// RecoverySubject is the token subject of a block-recovery token for the
// datanodes holding the block's replicas. Such a token has Write access
// and names the block under the recovery's generation stamp.
func RecoverySubject(replicas []string) string {
	return recoverPrefix + strings.Join(replicas, ",")
}

// RecoveryTargets reports whether a recovery token with subject sub names
// datanode.
func RecoveryTargets(sub, datanode string) bool { return names(sub, recoverPrefix, datanode) }

func names(sub, prefix, datanode string) bool {
	rest, ok := strings.CutPrefix(sub, prefix)
	if !ok || datanode == "" {
		return false
	}
	for _, id := range strings.Split(rest, ",") {
		if id == datanode {
			return true
		}
	}
	return false
}

// Unverified reads a token's subject and inode without checking its
// signature, times or shape. It is for a door whose protocol does not name
// the inode a block belongs to (HDFS's data transfer protocol names only
// the block): the door forms the Request from it, and Verify then checks
// the token against that Request as for any other. Nothing it returns may
// be trusted before Verify accepts the token.
func Unverified(token []byte) (user string, inode uint64, ok bool) {
	w, ok := unverified(token)
	if !ok {
		return "", 0, false
	}
	return w.Subject, *w.Inode, true
}

// UnverifiedGrants reports whether token says it grants a, without
// checking its signature, times or shape: a client deciding which of its
// tokens to present (a writer's rw token for reading its block back).
// Only a datanode's Verify decides whether it is honoured.
func UnverifiedGrants(token []byte, a Access) bool {
	w, ok := unverified(token)
	if !ok {
		return false
	}
	acc, err := ParseAccess(w.Access)
	return err == nil && acc.Has(a)
}

func unverified(token []byte) (*wireClaims, bool) {
	var w wireClaims
	if _, _, err := jwt.NewParser().ParseUnverified(string(token), &w); err != nil || w.Inode == nil {
		return nil, false
	}
	return &w, true
}
