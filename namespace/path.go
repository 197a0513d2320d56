package namespace

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blockfs/blockfs/errs"
)

// ValidatePath reports whether p is an acceptable absolute path under l
// (zero fields of l mean the defaults). "/" is valid; any other path is "/"
// followed by components separated by single slashes, with no trailing
// slash. Every failure is an errs.Invalid with its own message.
func ValidatePath(p string, l Limits) error {
	return validatePath("validatePath", p, l.normalize())
}

// validatePath is ValidatePath with an op name and normalized limits.
func validatePath(op, p string, l Limits) error {
	switch {
	case p == "":
		return errs.New(errs.Invalid, op, p, "empty path")
	case p[0] != '/':
		return errs.New(errs.Invalid, op, p, "path is not absolute")
	case len(p) > l.MaxPathLen:
		return errs.Newf(errs.Invalid, op, shorten(p), "path too long: %d bytes, limit %d", len(p), l.MaxPathLen)
	case strings.IndexByte(p, 0) >= 0:
		return errs.New(errs.Invalid, op, p, "path contains a NUL byte")
	case !utf8.ValidString(p):
		// Paths travel as protobuf strings, which must be UTF-8.
		return errs.New(errs.Invalid, op, strings.ToValidUTF8(p, "\uFFFD"), "path is not valid UTF-8")
	case p == "/":
		return nil
	}
	rest := p[1:]
	for {
		comp, tail, more := cutComp(rest)
		if msg := checkComponent(comp, l); msg != "" {
			return errs.New(errs.Invalid, op, p, msg)
		}
		if !more {
			return nil
		}
		rest = tail
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
