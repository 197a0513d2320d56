package decommission

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// excludeBy starts the set_by of the rows the exclude file made, so that
// a datanode taken out of the file is recommissioned and one an operator
// decommissioned by hand is not.
const excludeBy = "hosts-exclude:"

// hostsFile is the exclude file (dfs.hosts.exclude): one datanode id or
// data address (host:port) a line; blank lines and everything after a #
// are ignored. A file that does not parse is refused and the names loaded
// before stay.
type hostsFile struct {
	path string

	mu      sync.Mutex
	names   []string
	pending bool // loaded, not yet applied by a leader
}

func loadHostsFile(path string) (*hostsFile, error) {
	h := &hostsFile{path: path}
	if err := h.reload(); err != nil {
		return nil, err
	}
	return h, nil
}

// parseHosts parses an exclude file's bytes.
func parseHosts(path string, b []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case len(fields) > 1:
			return nil, errs.Newf(errs.Invalid, "hosts-exclude", path, "line %d: one datanode id or address a line, not %q", ln, strings.TrimSpace(line))
		}
		name := fields[0]
		if strings.Contains(name, ":") {
			host, port, err := net.SplitHostPort(name)
			if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
				return nil, errs.Newf(errs.Invalid, "hosts-exclude", path, "line %d: %q is not host:port", ln, name)
			}
		}
		out = append(out, name)
	}
	if err := sc.Err(); err != nil {
		return nil, errs.Wrap(errs.Invalid, "hosts-exclude", path, err)
	}
	return out, nil
}

// reload rereads the file; on error the names stay as they were.
func (h *hostsFile) reload() error {
	b, err := os.ReadFile(h.path)
	if err != nil {
		return errs.Wrap(errs.IO, "hosts-exclude", h.path, err)
	}
	names, err := parseHosts(h.path, b)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.names, h.pending = names, true
	h.mu.Unlock()
	return nil
}

func (h *hostsFile) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.names...)
}

// takePending reports whether a load waits to be applied, and clears it.
func (h *hostsFile) takePending() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pending
	h.pending = false
	return p
}

// ReloadExclude rereads the exclude file (the namenode calls it on
// SIGHUP); the leader's next Tick applies it. On error the old list
// stays. Without --hosts-exclude it does nothing.
func (s *Service) ReloadExclude() error {
	if s.exclude == nil {
		return nil
	}
	if err := s.exclude.reload(); err != nil {
		return err
	}
	s.cfg.Log.Info("exclude file reloaded", "file", s.exclude.path, "datanodes", len(s.exclude.list()))
	return nil
}

// RefreshNodes rereads the exclude file and applies it at once (HDFS's
// dfsadmin -refreshNodes): see applyExclude. A file that does not parse
// is refused (errs.Invalid) with the old list kept and nothing changed.
func (s *Service) RefreshNodes(ctx context.Context, by string) (*api.AdminStateResponse, error) {
	if s.exclude == nil {
		return nil, errs.New(errs.Precondition, "RefreshNodes", "", "this namenode has no exclude file (--hosts-exclude)")
	}
	if err := s.exclude.reload(); err != nil {
		return nil, err
	}
	s.exclude.takePending()
	r, _, err := s.applyExclude(ctx, by)
	return r, err
}

// applyExclude decommissions every registered datanode the exclude file
// names (as Decommission does, with its checks: a refusal changes
// nothing), and recommissions those it decommissioned before and no
// longer names. It returns how many names are not registered yet: the
// leader's Tick tries again until they are (a datanode that registers
// after the leader started), a refreshNodes leaves them to a later one.
func (s *Service) applyExclude(ctx context.Context, by string) (_ *api.AdminStateResponse, unknown int, _ error) {
	const op = "RefreshNodes"
	var ids []string
	for _, nm := range s.exclude.list() {
		if got, err := s.resolve(op, []string{nm}, nil); err == nil {
			ids = append(ids, got...)
		} else {
			unknown++
		}
	}
	out := &api.AdminStateResponse{}
	listed := map[string]bool{}
	for _, id := range ids {
		listed[id] = true
	}
	ids = ids[:0]
	for id := range listed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var back []*api.AdminStateEntry
	for _, e := range s.cfg.States() {
		if strings.HasPrefix(e.SetBy, excludeBy) && !listed[e.DatanodeId] {
			back = append(back, &api.AdminStateEntry{DatanodeId: e.DatanodeId, State: api.AdminState_ADMIN_NORMAL})
		}
	}
	if len(ids) > 0 {
		r, err := s.decommission(ctx, op, excludeBy+by, ids)
		if err != nil {
			return nil, unknown, err
		}
		out = r
	}
	if len(back) > 0 {
		r, err := s.propose(ctx, op, by, back, nil)
		if err != nil {
			return nil, unknown, err
		}
		out.Changed, out.Index = append(out.Changed, r.Changed...), r.Index
	}
	return out, unknown, nil
}

// markPending makes the leader's next Tick apply the list again.
func (h *hostsFile) markPending() {
	h.mu.Lock()
	h.pending = true
	h.mu.Unlock()
}
