package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"

	"github.com/blockfs/blockfs/errs"
)

// DefaultRack is the rack of every datanode the mapping does not name.
const DefaultRack = "/default-rack"

// Bounds of a mapping file.
const (
	maxFileBytes = 64 << 20
	maxDepth     = 8
	maxComponent = 64
)

// Table is one parsed mapping; immutable.
type Table struct {
	racks map[string]string // key (id, host:port or host) -> rack
}

// Empty is the table that puts every datanode in DefaultRack.
func Empty() *Table { return &Table{racks: map[string]string{}} }

// Parse reads a mapping file's text (package doc) into a Table.
func Parse(r io.Reader) (*Table, error) {
	const op = "topology.Parse"
	t := Empty()
	sc := bufio.NewScanner(io.LimitReader(r, maxFileBytes+1))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	read := 0
	for line := 1; sc.Scan(); line++ {
		read += len(sc.Bytes()) + 1
		if read > maxFileBytes {
			return nil, errs.Newf(errs.Invalid, op, "", "mapping is over %d bytes", maxFileBytes)
		}
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		switch {
		case len(f) == 0:
			continue
		case len(f) != 2:
			return nil, errs.Newf(errs.Invalid, op, "", "line %d: want a datanode and a rack, got %d fields", line, len(f))
		}
		if err := ValidRack(f[1]); err != nil {
			return nil, errs.Newf(errs.Invalid, op, "", "line %d: %v", line, err)
		}
		if prev, ok := t.racks[f[0]]; ok && prev != f[1] {
			return nil, errs.Newf(errs.Invalid, op, "", "line %d: %s is in %s already", line, f[0], prev)
		}
		t.racks[f[0]] = f[1]
	}
	if err := sc.Err(); err != nil {
		return nil, errs.Wrap(errs.Invalid, op, "", err)
	}
	return t, nil
}

// ValidRack reports why rack is not a rack path, or nil.
func ValidRack(rack string) error {
	if !strings.HasPrefix(rack, "/") || len(rack) == 1 {
		return fmt.Errorf("rack %q does not start with / and a name", rack)
	}
	parts := strings.Split(rack[1:], "/")
	if len(parts) > maxDepth {
		return fmt.Errorf("rack %q is deeper than %d", rack, maxDepth)
	}
	for _, p := range parts {
		if p == "" || len(p) > maxComponent {
			return fmt.Errorf("rack %q has an empty or over-long component", rack)
		}
		for _, c := range []byte(p) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return fmt.Errorf("rack %q has the character %q", rack, c)
			}
		}
	}
	return nil
}

// Rack returns the rack of the datanode with id and data address addr
// ("host:port"): the mapping of its id, else of its address, else of its
// host, else DefaultRack.
func (t *Table) Rack(id, addr string) string {
	if r, ok := t.racks[id]; ok {
		return r
	}
	if r, ok := t.racks[addr]; ok {
		return r
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if r, ok := t.racks[host]; ok {
			return r
		}
	}
	return DefaultRack
}

// Len returns how many keys the table maps.
func (t *Table) Len() int { return len(t.racks) }

// Resolver holds the current Table of a mapping file and rereads it on
// Reload. It is safe for concurrent use; Rack takes no lock.
type Resolver struct {
	path string
	cur  atomic.Pointer[Table]
}

// NewResolver loads the mapping file at path ("" for none: every datanode
// in DefaultRack).
func NewResolver(path string) (*Resolver, error) {
	r := &Resolver{path: path}
	r.cur.Store(Empty())
	if path == "" {
		return r, nil
	}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload rereads the mapping file. If it cannot be read or does not parse,
// the error says why and the table in force stays.
func (r *Resolver) Reload() error {
	if r.path == "" {
		return nil
	}
	b, err := os.ReadFile(r.path)
	if err != nil {
		return errs.Wrap(errs.IO, "topology.Resolver.Reload", r.path, err)
	}
	t, err := Parse(bytes.NewReader(b))
	if err != nil {
		return errs.Wrap(errs.Invalid, "topology.Resolver.Reload", r.path, err)
	}
	r.cur.Store(t)
	return nil
}

// Rack is Table.Rack on the table in force.
func (r *Resolver) Rack(id, addr string) string { return r.cur.Load().Rack(id, addr) }

// Path returns the mapping file's path, "" for none.
func (r *Resolver) Path() string { return r.path }
