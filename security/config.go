package security

import (
	"fmt"
	"strings"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// Mode selects how the Issuer hands out read tokens for a file.
type Mode uint8

const (
	// Cached is PerRequest with the signed token cached per (user, inode,
	// access, kid) and reused until Config.ReuseFraction of its lifetime
	// has passed. The default.
	Cached Mode = iota
	// PerBlock signs one token per located block (the HDFS baseline).
	PerBlock
	// PerRequest signs one token per response, scoped to the file.
	PerRequest
)

var modeNames = [...]string{Cached: "cached", PerBlock: "per-block", PerRequest: "per-request"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", m)
}

// ParseMode parses "per-block", "per-request" or "cached" ("" is Cached).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "cached":
		return Cached, nil
	case "per-block":
		return PerBlock, nil
	case "per-request":
		return PerRequest, nil
	}
	return 0, errs.Newf(errs.Invalid, "security.ParseMode", "", "unknown token mode %q (want per-block, per-request or cached)", s)
}

// Config configures key rotation, issuing and verification. Build it with
// DefaultConfig and adjust; Validate reports the first bad field.
type Config struct {
	// NodeID prefixes the kid of keys made by a KeyManager ("<NodeID>-<random>").
	NodeID string
	// Mode is how FileToken works.
	Mode Mode
	// TokenLifetime is the lifetime (exp - iat) of every issued token and the
	// longest lifetime the key bookkeeping plans for.
	TokenLifetime time.Duration
	// ReuseFraction is the share of TokenLifetime during which a cached token
	// is handed out again (0 < f <= 1). A reused token has at least
	// (1-f)*TokenLifetime left.
	ReuseFraction float64
	// CacheSize bounds the issuer's token cache (entries, all shards).
	CacheSize int
	// KeyRotation is how long a signing key is current.
	KeyRotation time.Duration
	// ClockSkew is the allowance on exp/nbf and key windows when verifying.
	ClockSkew time.Duration
	// MaxTokenSize is the largest token the verifier will parse, in bytes.
	MaxTokenSize int
	// VerifyCache enables the verifier's cache of verified tokens.
	VerifyCache bool
	// VerifyCacheSize bounds that cache (entries, all shards).
	VerifyCacheSize int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultConfig returns the defaults: cached mode, 10m tokens reused for half
// their lifetime, 65536-entry caches, hourly key rotation, 30s skew, 8 KiB
// token limit.
func DefaultConfig() Config {
	return Config{
		NodeID:          "nn",
		Mode:            Cached,
		TokenLifetime:   10 * time.Minute,
		ReuseFraction:   0.5,
		CacheSize:       65536,
		KeyRotation:     time.Hour,
		ClockSkew:       30 * time.Second,
		MaxTokenSize:    8 << 10,
		VerifyCache:     true,
		VerifyCacheSize: 65536,
	}
}

// Validate reports the first invalid field as an errs.Invalid error.
func (c *Config) Validate() error {
	bad := func(f string, a ...any) error {
		return errs.Newf(errs.Invalid, "security.Config", "", f, a...)
	}
	switch {
	case c.Mode > PerRequest:
		return bad("unknown mode %d", c.Mode)
	case strings.ContainsAny(c.NodeID, " \t\r\n\"\\"):
		return bad("NodeID %q contains blanks or quotes", c.NodeID)
	case len(c.NodeID) > 64:
		return bad("NodeID longer than 64 bytes")
	case c.TokenLifetime < time.Second:
		return bad("TokenLifetime %v below 1s", c.TokenLifetime)
	case !(c.ReuseFraction > 0 && c.ReuseFraction <= 1):
		return bad("ReuseFraction %v not in (0, 1]", c.ReuseFraction)
	case c.CacheSize < 1:
		return bad("CacheSize %d below 1", c.CacheSize)
	case c.KeyRotation < time.Second:
		return bad("KeyRotation %v below 1s", c.KeyRotation)
	case c.ClockSkew < 0:
		return bad("ClockSkew %v negative", c.ClockSkew)
	case c.MaxTokenSize < 256:
		return bad("MaxTokenSize %d below 256", c.MaxTokenSize)
	case c.VerifyCache && c.VerifyCacheSize < 1:
		return bad("VerifyCacheSize %d below 1 with VerifyCache on", c.VerifyCacheSize)
	}
	return nil
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Access is a set of access modes a token grants.
type Access uint8

// The access modes. Their letters on the wire are "r", "w" and "c".
const (
	Read  Access = 1 << iota // read a block of the inode
	Write                    // write (create/append) one block
	Copy                     // replicate/copy a block between datanodes
)

const accessAll = Read | Write | Copy

// Has reports whether a grants every mode in want (and want is not empty).
func (a Access) Has(want Access) bool { return want != 0 && a&want == want }

// String returns the wire form: letters r, w, c in that order ("rw").
func (a Access) String() string {
	var b [3]byte
	n := 0
	if a&Read != 0 {
		b[n] = 'r'
		n++
	}
	if a&Write != 0 {
		b[n] = 'w'
		n++
	}
	if a&Copy != 0 {
		b[n] = 'c'
		n++
	}
	return string(b[:n])
}

// ParseAccess parses the wire form: a non-empty set of the letters r, w, c,
// each at most once, in any order.
func ParseAccess(s string) (Access, error) {
	var a Access
	if s == "" || len(s) > 3 {
		return 0, errs.Newf(errs.Invalid, "security.ParseAccess", "", "bad access mode %q", s)
	}
	for i := 0; i < len(s); i++ {
		var m Access
		switch s[i] {
		case 'r':
			m = Read
		case 'w':
			m = Write
		case 'c':
			m = Copy
		default:
			return 0, errs.Newf(errs.Invalid, "security.ParseAccess", "", "bad access mode %q", s)
		}
		if a&m != 0 {
			return 0, errs.Newf(errs.Invalid, "security.ParseAccess", "", "bad access mode %q", s)
		}
		a |= m
	}
	return a, nil
}
