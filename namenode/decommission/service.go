// Package decommission is a namenode's datanode admin states, as HDFS
// defines decommission and maintenance: the operator's calls
// (Decommission, Recommission, Maintenance, RefreshNodes and the exclude
// file, like dfs.hosts.exclude), each checked against the leader's block
// map and proposed through Raft (fsm.CmdSetAdminState); and the leader's
// monitor (Tick), which proposes the transitions the states lead to:
// Decommissioning -> Decommissioned once every block the datanode holds or
// writes has its full replication elsewhere (blocks.Manager.AdminProgress),
// EnteringMaintenance -> InMaintenance once each keeps its maintenance
// minimum, and a maintenance -> Normal at its expiry. Because the states
// are replicated and the monitor reads only them and the block map, a new
// leader carries on where the old one stopped.
//
// The namenode wires it: it proposes, forwards calls from a follower to
// the leader, and tells the block map the table as the FSM applies it
// (ToAdmin).
package decommission

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
)

// Config is what a Service is built from; every field but ExcludeFile is
// required.
type Config struct {
	Blocks *blocks.Manager
	// States returns the replicated admin-state table (fsm.FSM.AdminStates).
	States func() []*api.AdminStateEntry
	// Propose proposes a command through Raft on the leader and returns
	// its result and index once applied.
	Propose func(ctx context.Context, op string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, uint64, error)
	// ExcludeFile, if set, names the datanodes to decommission (one id or
	// address a line, # comments), reread by ReloadExclude and RefreshNodes.
	ExcludeFile string
	// Self names this namenode as a proposer (the monitor's stamp).
	Self string
	Log  *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Service is one namenode's admin-state operations and monitor. Its
// methods that propose must run on the leader.
type Service struct {
	cfg     Config
	exclude *hostsFile
}

// New returns a Service, or an error if the exclude file does not parse.
func New(cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Service{cfg: cfg}
	if cfg.ExcludeFile != "" {
		h, err := loadHostsFile(cfg.ExcludeFile)
		if err != nil {
			return nil, err
		}
		s.exclude = h
	}
	return s, nil
}

// ToAdmin turns the FSM's table into the block map's form.
func ToAdmin(entries []*api.AdminStateEntry) map[string]blocks.Admin {
	out := make(map[string]blocks.Admin, len(entries))
	for _, e := range entries {
		a := blocks.Admin{State: blocks.AdminState(e.State), MinReplicas: int(e.MinReplicas)}
		if e.ExpiryUnixMs > 0 {
			a.Expiry = time.UnixMilli(e.ExpiryUnixMs)
		}
		out[e.DatanodeId] = a
	}
	return out
}

// table returns the replicated table by datanode id.
func (s *Service) table() map[string]*api.AdminStateEntry {
	es := s.cfg.States()
	out := make(map[string]*api.AdminStateEntry, len(es))
	for _, e := range es {
		out[e.DatanodeId] = e
	}
	return out
}

// resolve turns names (datanode ids or data addresses) into registered
// datanode ids, sorted and without duplicates; an unknown name is an
// errs.Invalid error naming it, unless known is true for it (a row of the
// table: a datanode recommissioned before it registers here).
func (s *Service) resolve(op string, names []string, known func(string) bool) ([]string, error) {
	if len(names) == 0 {
		return nil, errs.New(errs.Invalid, op, "", "no datanode named")
	}
	byAddr := map[string]string{}
	byID := map[string]bool{}
	for _, d := range s.cfg.Blocks.Datanodes() {
		byAddr[d.Addr], byID[d.ID] = d.ID, true
	}
	seen := map[string]bool{}
	var out []string
	for _, nm := range names {
		id := nm
		if !byID[nm] {
			if a, ok := byAddr[nm]; ok {
				id = a
			} else if known == nil || !known(nm) {
				return nil, errs.Newf(errs.Invalid, op, nm, "no datanode %q is registered (give its id or data address)", nm)
			}
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Decommission starts decommissioning the datanodes names: after the
// block map's checks (blocks.Manager.CheckDecommission: unknown, dead,
// more than the cluster can lose, placement impossible), every one not
// already decommissioning or decommissioned becomes Decommissioning, all
// in one command. by is the caller, stamped in the rows.
func (s *Service) Decommission(ctx context.Context, by string, names []string) (*api.AdminStateResponse, error) {
	const op = "Decommission"
	ids, err := s.resolve(op, names, nil)
	if err != nil {
		return nil, err
	}
	return s.decommission(ctx, op, by, ids)
}

func (s *Service) decommission(ctx context.Context, op, by string, ids []string) (*api.AdminStateResponse, error) {
	tab := s.table()
	var todo []string
	for _, id := range ids {
		if st := tab[id].GetState(); st != api.AdminState_ADMIN_DECOMMISSIONING && st != api.AdminState_ADMIN_DECOMMISSIONED {
			todo = append(todo, id)
		}
	}
	if len(todo) == 0 {
		return &api.AdminStateResponse{}, nil
	}
	if err := s.cfg.Blocks.CheckDecommission(todo); err != nil {
		return nil, errs.WithOp(err, op)
	}
	entries := make([]*api.AdminStateEntry, len(todo))
	for i, id := range todo {
		entries[i] = &api.AdminStateEntry{DatanodeId: id, State: api.AdminState_ADMIN_DECOMMISSIONING}
	}
	return s.propose(ctx, op, by, entries, nil)
}

// Recommission makes the datanodes names Normal again, from any state;
// those already normal are left alone.
func (s *Service) Recommission(ctx context.Context, by string, names []string) (*api.AdminStateResponse, error) {
	const op = "Recommission"
	tab := s.table()
	ids, err := s.resolve(op, names, func(id string) bool { return tab[id] != nil })
	if err != nil {
		return nil, err
	}
	var entries []*api.AdminStateEntry
	for _, id := range ids {
		if tab[id] != nil {
			entries = append(entries, &api.AdminStateEntry{DatanodeId: id, State: api.AdminState_ADMIN_NORMAL})
		}
	}
	if len(entries) == 0 {
		return &api.AdminStateResponse{}, nil
	}
	return s.propose(ctx, op, by, entries, nil)
}

// Maintenance puts the datanodes names in maintenance until until, each
// block keeping minReplicas (0: 1) normal live copies: they enter
// EnteringMaintenance, and InMaintenance once that holds.
func (s *Service) Maintenance(ctx context.Context, by string, names []string, until time.Time, minReplicas uint32) (*api.AdminStateResponse, error) {
	const op = "Maintenance"
	if !until.After(s.cfg.Now()) {
		return nil, errs.Newf(errs.Invalid, op, "", "the maintenance must end in the future, not at %s", until.UTC().Format(time.RFC3339))
	}
	if minReplicas == 0 {
		minReplicas = 1
	}
	if minReplicas > 32 {
		return nil, errs.Newf(errs.Invalid, op, "", "min replicas %d: at most 32", minReplicas)
	}
	ids, err := s.resolve(op, names, nil)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Blocks.CheckMaintenance(ids); err != nil {
		return nil, errs.WithOp(err, op)
	}
	entries := make([]*api.AdminStateEntry, len(ids))
	for i, id := range ids {
		entries[i] = &api.AdminStateEntry{DatanodeId: id, State: api.AdminState_ADMIN_ENTERING_MAINTENANCE,
			ExpiryUnixMs: until.UnixMilli(), MinReplicas: minReplicas}
	}
	return s.propose(ctx, op, by, entries, nil)
}

func (s *Service) propose(ctx context.Context, op, by string, entries []*api.AdminStateEntry, from *api.AdminState) (*api.AdminStateResponse, error) {
	c := fsm.AdminStateCommand(entries, from, by, s.cfg.Now())
	res, idx, err := s.cfg.Propose(ctx, op, fsm.CmdSetAdminState, c)
	if err == nil {
		err = fsm.ResultErr(res)
	}
	if err != nil {
		return nil, err
	}
	out := &api.AdminStateResponse{Index: idx}
	for _, e := range entries {
		out.Changed = append(out.Changed, e.DatanodeId)
	}
	s.cfg.Log.Info("datanode admin state", "op", op, "datanodes", strings.Join(out.Changed, ","), "state", entries[0].State.String(), "by", by, "index", idx)
	return out, nil
}

// Tick is the leader's monitor round: it applies a reloaded exclude file,
// then proposes every transition due (see the package doc). Run it
// periodically, on the leader only, outside safe mode.
func (s *Service) Tick(ctx context.Context) {
	if s.exclude != nil && s.exclude.takePending() {
		if _, unknown, err := s.applyExclude(ctx, s.cfg.Self); err != nil {
			s.cfg.Log.Warn("exclude file not applied", "file", s.exclude.path, "err", err)
		} else if unknown > 0 {
			s.exclude.markPending() // names of datanodes that have not registered yet
		}
	}
	now := s.cfg.Now()
	for _, e := range s.cfg.States() {
		next, ok := s.next(e, now)
		if !ok {
			continue
		}
		from, by := e.State, s.cfg.Self
		if strings.HasPrefix(e.SetBy, excludeBy) {
			by = excludeBy + by // still the exclude file's, for refreshes
		}
		if _, err := s.propose(ctx, "AdminMonitor", by, []*api.AdminStateEntry{next}, &from); err != nil && !errs.Is(err, errs.Precondition) {
			s.cfg.Log.Warn("admin state transition", "datanode", e.DatanodeId, "to", next.State.String(), "err", err)
		}
	}
}

// next returns the row e moves to now, if it moves.
func (s *Service) next(e *api.AdminStateEntry, now time.Time) (*api.AdminStateEntry, bool) {
	maint := e.State == api.AdminState_ADMIN_ENTERING_MAINTENANCE || e.State == api.AdminState_ADMIN_IN_MAINTENANCE
	if maint && !now.Before(time.UnixMilli(e.ExpiryUnixMs)) {
		return &api.AdminStateEntry{DatanodeId: e.DatanodeId, State: api.AdminState_ADMIN_NORMAL}, true
	}
	if e.State != api.AdminState_ADMIN_DECOMMISSIONING && e.State != api.AdminState_ADMIN_ENTERING_MAINTENANCE {
		return nil, false
	}
	p, ok := s.cfg.Blocks.AdminProgress(e.DatanodeId, true)
	if !ok || !p.Done() {
		return nil, false
	}
	if e.State == api.AdminState_ADMIN_DECOMMISSIONING {
		return &api.AdminStateEntry{DatanodeId: e.DatanodeId, State: api.AdminState_ADMIN_DECOMMISSIONED}, true
	}
	return &api.AdminStateEntry{DatanodeId: e.DatanodeId, State: api.AdminState_ADMIN_IN_MAINTENANCE,
		ExpiryUnixMs: e.ExpiryUnixMs, MinReplicas: e.MinReplicas}, true
}

// Fill sets the admin fields of e, the description of datanode d, with its
// progress as this namenode's block map sees it.
func (s *Service) Fill(e *api.DatanodeInfo, d blocks.Datanode) {
	e.AdminState = d.Admin.State.HDFS()
	if !d.Admin.Expiry.IsZero() {
		e.MaintenanceExpiryUnixMs = d.Admin.Expiry.UnixMilli()
	}
	if p, ok := s.cfg.Blocks.AdminProgress(d.ID, false); ok {
		e.BlocksLeft, e.BytesLeft, e.OpenFilesBlocking = uint64(p.Blocks), p.Bytes, uint64(p.OpenFiles)
	}
}
