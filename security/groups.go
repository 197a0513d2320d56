package security

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"sync/atomic"

	"github.com/blockfs/blockfs/errs"
)

// GroupMapping maps user names to their groups, as the namenode's own
// static table (like Hadoop's static user-to-group mapping): what a client
// claims about its groups is never used. Lookups are lock-free; Reload
// swaps in a whole new table (the namenode calls it on SIGHUP).
//
// The file format (docs/FORMATS.md "Group mapping"): one user per line,
// "user = group1, group2"; blank lines and lines starting with # are
// ignored; a user listed twice is an error.
type GroupMapping struct {
	file  string
	table atomic.Pointer[map[string][]string]
}

// NewGroupMapping returns a mapping read from file; "" is an empty mapping
// (every user has no groups).
func NewGroupMapping(file string) (*GroupMapping, error) {
	g := &GroupMapping{file: file}
	empty := map[string][]string{}
	g.table.Store(&empty)
	if file == "" {
		return g, nil
	}
	return g, g.Reload()
}

// File is the file the mapping reads ("" for none).
func (g *GroupMapping) File() string { return g.file }

// Reload rereads the file. On error the old table stays in force.
func (g *GroupMapping) Reload() error {
	if g.file == "" {
		return nil
	}
	b, err := os.ReadFile(g.file)
	if err != nil {
		return errs.Wrap(errs.Invalid, "security.ParseGroupMapping", g.file, err)
	}
	t, err := ParseGroupMapping(b)
	if err != nil {
		return errs.Wrap(errs.Invalid, "security.ParseGroupMapping", g.file, err)
	}
	g.table.Store(&t)
	return nil
}

// Groups returns user's groups (nil for an unknown user). The slice is
// shared: callers must not modify it.
func (g *GroupMapping) Groups(user string) []string {
	return (*g.table.Load())[user]
}

// Users is the number of users in the table.
func (g *GroupMapping) Users() int { return len(*g.table.Load()) }

// ParseGroupMapping parses the group mapping file format.
func ParseGroupMapping(b []byte) (map[string][]string, error) {
	out := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		user, groups, ok := strings.Cut(s, "=")
		user = strings.TrimSpace(user)
		if !ok {
			return nil, errs.Newf(errs.Invalid, "security.ParseGroupMapping", "", "line %d: want user = group1, group2", line)
		}
		if err := ValidateName(user); err != nil {
			return nil, errs.Newf(errs.Invalid, "security.ParseGroupMapping", "", "line %d: %v", line, err)
		}
		if _, dup := out[user]; dup {
			return nil, errs.Newf(errs.Invalid, "security.ParseGroupMapping", "", "line %d: user %q listed twice", line, user)
		}
		gs := []string{}
		for _, g := range strings.Split(groups, ",") {
			g = strings.TrimSpace(g)
			if g == "" {
				continue
			}
			if err := ValidateName(g); err != nil {
				return nil, errs.Newf(errs.Invalid, "security.ParseGroupMapping", "", "line %d: group: %v", line, err)
			}
			gs = append(gs, g)
		}
		out[user] = gs
	}
	if err := sc.Err(); err != nil {
		return nil, errs.Wrap(errs.Invalid, "security.ParseGroupMapping", "", err)
	}
	return out, nil
}
