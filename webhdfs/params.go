package webhdfs

import (
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/blockfs/blockfs/namespace"
)

// Prefix is where the REST API lives on both servers' HTTP ports.
const Prefix = "/webhdfs/v1"

// TokenParam is the query parameter of a namenode's redirect URL that
// carries the redirect token (docs/FORMATS.md).
const TokenParam = "blockfs.token"

// Query is a request's query parameters with names folded to lower case
// (Hadoop's parameter names are case-insensitive). Unknown parameters are
// ignored, as Hadoop ignores them.
type Query struct{ v url.Values }

// ParseQuery parses raw (a URL's RawQuery). A query that cannot be
// decoded is an IllegalArgumentException.
func ParseQuery(raw string) (Query, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return Query{}, &Error{Ex: IllegalArgument, Msg: "malformed query string", Err: err}
	}
	q := Query{v: url.Values{}}
	for k, vs := range v {
		lk := strings.ToLower(k)
		q.v[lk] = append(q.v[lk], vs...)
	}
	return q, nil
}

// Has reports whether name was given.
func (q Query) Has(name string) bool { return len(q.v[name]) > 0 }

// String returns name's value, or "" when absent.
func (q Query) String(name string) string {
	if vs := q.v[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func quoteParam(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}

func badParam(name, val, why string) *Error {
	return Errorf(IllegalArgument, `Invalid value for webhdfs parameter "`+name+`": `+quoteParam(val)+" "+why)
}

// Bool returns name as a boolean ("true" or "false", any case), def when
// absent or empty.
func (q Query) Bool(name string, def bool) (bool, error) {
	s := q.String(name)
	switch strings.ToLower(s) {
	case "":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, badParam(name, s, "is not true or false")
}

// Int returns name as a decimal integer in [lo, hi], def when absent or
// empty.
func (q Query) Int(name string, def, lo, hi int64) (int64, error) {
	s := q.String(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badParam(name, s, "is not a decimal integer")
	}
	if n < lo || n > hi {
		return 0, badParam(name, s, "is out of range ["+strconv.FormatInt(lo, 10)+", "+strconv.FormatInt(hi, 10)+"]")
	}
	return n, nil
}

// Uint returns name as a non-negative decimal integer (up to 2^63-1, as
// Hadoop's longs), def when absent or empty.
func (q Query) Uint(name string, def uint64) (uint64, error) {
	n, err := q.Int(name, int64(min(def, math.MaxInt64)), 0, math.MaxInt64)
	return uint64(n), err
}

// Permission returns name as octal permission bits (at most 01777), def
// when absent or empty.
func (q Query) Permission(name string, def uint32) (uint32, error) {
	s := q.String(name)
	if s == "" {
		return def, nil
	}
	if len(s) > 4 {
		return 0, badParam(name, s, "is not an octal permission of at most 4 digits")
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o1777 {
		return 0, badParam(name, s, "is not an octal permission in [0, 1777]")
	}
	return uint32(n), nil
}

// Path returns the namespace path of a request URL path under Prefix:
// the part after it, "/" when empty, with trailing slashes dropped (as
// Hadoop's Path normalizes them), and checked against the namespace's
// path rules (an InvalidPathException otherwise).
func Path(urlPath string) (string, error) {
	p, ok := strings.CutPrefix(urlPath, Prefix)
	if !ok || (p != "" && p[0] != '/') {
		return "", Errorf(InvalidPath, "Invalid path name "+quoteParam(urlPath)+": not under "+Prefix+"/")
	}
	return CheckPath(p)
}

// CheckPath normalizes and checks an absolute namespace path p (as
// Path does), e.g. RENAME's destination.
func CheckPath(p string) (string, error) {
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	if p == "" {
		p = "/"
	}
	if err := namespace.ValidatePath(p, namespace.DefaultLimits()); err != nil {
		return "", &Error{Ex: InvalidPath, Msg: "Invalid path name " + quoteParam(p), Err: err}
	}
	return p, nil
}
