package namespace

import (
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blockfs/blockfs/errs"
)

// Path is a parsed, valid absolute path: "/" or "/" followed by components
// separated by single slashes, none empty, "." or "..", no NUL, valid
// UTF-8, within the limits it was parsed under. ParsePath (or
// Limits.ParsePath) is the only way to make one, so a Path is validated
// once, where it enters the system, and every lookup of the Tree and of a
// Session takes one and never re-validates it.
//
// The zero Path is no path: IsZero reports it, String returns "", Parent
// returns it and Components yields nothing; every Tree and Session method
// refuses it (errs.Invalid, "empty path") rather than resolving it.
type Path struct {
	s string
	// long is the length in bytes of the longest component, so that a
	// tree with smaller limits than those p was parsed under can refuse
	// it without rescanning (Tree.admit).
	long int
	// snap is set when a component is ".snapshot" (DotSnapshot): only
	// such a path can name a namespace snapshot (hsnap.go), so every
	// other path resolves without looking for one.
	snap bool
}

// ParsePath parses p under the default limits (DefaultLimits). Every
// failure is an errs.Invalid with its own message and op
// "namespace.ParsePath"; the error is new, so a caller (a server's
// handler) may set its Op to the operation it serves.
func ParsePath(p string) (Path, error) { return parsePath(parseOp, p, DefaultLimits()) }

// ParsePath is ParsePath under l (zero fields of l mean the defaults).
func (l Limits) ParsePath(p string) (Path, error) { return parsePath(parseOp, p, l.normalize()) }

// ValidatePath reports whether p is an acceptable path under l: it is
// l.ParsePath without the result, for a caller that only checks.
func ValidatePath(p string, l Limits) error {
	_, err := l.ParsePath(p)
	return err
}

// parseOp is the op of ParsePath's errors.
const parseOp = "namespace.ParsePath"

// parsePath is ParsePath with an op name and normalized limits.
func parsePath(op, p string, l Limits) (Path, error) {
	switch {
	case p == "":
		return Path{}, errs.New(errs.Invalid, op, p, "empty path")
	case p[0] != '/':
		return Path{}, errs.New(errs.Invalid, op, p, "path is not absolute")
	case len(p) > l.MaxPathLen:
		return Path{}, tooLong(op, p, l)
	case strings.IndexByte(p, 0) >= 0:
		return Path{}, errs.New(errs.Invalid, op, p, "path contains a NUL byte")
	case !utf8.ValidString(p):
		// Paths travel as protobuf strings, which must be UTF-8.
		return Path{}, errs.New(errs.Invalid, op, strings.ToValidUTF8(p, "\uFFFD"), "path is not valid UTF-8")
	case p == "/":
		return Path{s: p}, nil
	}
	long, snap := 0, false
	for comp := range components(p) {
		if msg := checkComponent(comp, l); msg != "" {
			return Path{}, errs.New(errs.Invalid, op, p, msg)
		}
		long = max(long, len(comp))
		snap = snap || comp == DotSnapshot
	}
	return Path{s: p, long: long, snap: snap}, nil
}

// String returns the path ("" for the zero Path).
func (p Path) String() string { return p.s }

// IsZero reports whether p is the zero Path (not a parsed path).
func (p Path) IsZero() bool { return p.s == "" }

// IsRoot reports whether p is "/".
func (p Path) IsRoot() bool { return p.s == "/" }

// Components yields the components of p in order: none for "/" and for
// the zero Path.
func (p Path) Components() iter.Seq[string] { return components(p.s) }

// Base returns the last component of p ("" for "/" and the zero Path).
func (p Path) Base() string {
	if p.s == "" {
		return ""
	}
	return baseName(p.s)
}

// Parent returns the directory holding p: "/" for "/" and its children,
// the zero Path for the zero Path.
func (p Path) Parent() Path {
	if p.s == "" || p.s == "/" {
		return p
	}
	par := parentPath(p.s)
	long, snap := 0, false
	for comp := range components(par) {
		long = max(long, len(comp))
		snap = snap || comp == DotSnapshot
	}
	return Path{s: par, long: long, snap: snap}
}

// admit checks that p may be resolved in t: it is not the zero Path and
// is within t's limits (a Path parsed under larger limits than the
// tree's is refused as ParsePath under the tree's limits would refuse
// it). It costs two comparisons; the path itself was validated by
// ParsePath.
func (t *Tree) admit(op string, p Path) error {
	switch {
	case p.s == "":
		return errs.New(errs.Invalid, op, "", "empty path")
	case len(p.s) > t.lim.MaxPathLen:
		return tooLong(op, p.s, t.lim)
	case p.long > t.lim.MaxComponentLen:
		return errs.New(errs.Invalid, op, p.s, "path component too long: "+strconv.Itoa(p.long)+" bytes, limit "+strconv.Itoa(t.lim.MaxComponentLen))
	}
	return nil
}

func tooLong(op, p string, l Limits) error {
	return errs.Newf(errs.Invalid, op, shorten(p), "path too long: %d bytes, limit %d", len(p), l.MaxPathLen)
}

// components yields the components of p, a path that starts with "/"
// (none for "/" or "").
func components(p string) iter.Seq[string] {
	return func(yield func(string) bool) {
		if len(p) <= 1 {
			return
		}
		rest := p[1:]
		for {
			comp, tail, more := cutComp(rest)
			if !yield(comp) || !more {
				return
			}
			rest = tail
		}
	}
}

// checkComponent returns why name is not a valid path component, or "".
// It does not look for NUL bytes or slashes (the path checks did).
func checkComponent(name string, l Limits) string {
	switch {
	case name == "":
		return `empty path component ("//" or trailing "/")`
	case name == ".":
		return `path component "." not allowed`
	case name == "..":
		return `path component ".." not allowed`
	case len(name) > l.MaxComponentLen:
		return "path component too long: " + strconv.Itoa(len(name)) + " bytes, limit " + strconv.Itoa(l.MaxComponentLen)
	}
	return ""
}

// cutComp splits the first component off rest (a path without its leading
// slash). more reports whether a slash followed it.
func cutComp(rest string) (comp, tail string, more bool) {
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i], rest[i+1:], true
	}
	return rest, "", false
}

// prefixOf returns the path of the inode reached when rest (a suffix of p,
// without its leading slash) is still unresolved.
func prefixOf(p, rest string) string {
	n := len(p) - len(rest) - 1
	if n <= 0 {
		return "/"
	}
	return p[:n]
}

// parentPath returns the parent directory of a valid path other than "/".
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// baseName returns the last component of a valid path ("" for "/").
func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// joinPath joins a directory path and a child name.
func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// shorten keeps an over-long path readable in an error.
func shorten(p string) string {
	if len(p) <= 64 {
		return p
	}
	return p[:64] + "..."
}
