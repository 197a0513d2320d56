package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/blockfs/blockfs/api"
)

// adminState runs the datanode admin-state commands (docs/OPERATIONS.md,
// "Decommission", "Maintenance"):
//
//	dfs admin decommission DN...
//	dfs admin recommission DN...
//	dfs admin maintenance DN... --until TIME [--maintenance-min-replicas N]
//	dfs admin refreshNodes
//
// DN is a datanode id or data address; TIME is RFC3339 or a duration from
// now (2h, 30m).
func adminState(e *env, sub string, args []string) error {
	fs := flag.NewFlagSet("dfs admin "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	until := fs.String("until", "", "end of the maintenance: RFC3339 (2026-01-02T15:04:05Z) or a duration from now (2h)")
	minRepl := fs.Uint("maintenance-min-replicas", 1, "normal live copies each block keeps during the maintenance")
	// Flags may follow the datanodes.
	var dns []string
	for {
		if err := fs.Parse(args); err != nil {
			return usageErr{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		dns, args = append(dns, fs.Arg(0)), fs.Args()[1:]
	}
	var r *api.AdminStateResponse
	var err error
	switch {
	case sub == "refreshNodes" && len(dns) != 0:
		return usageErr{"admin refreshNodes takes no arguments"}
	case sub == "refreshNodes":
		r, err = e.cl.RefreshNodes(e.ctx)
	case len(dns) == 0:
		return usageErr{"admin " + sub + " wants one or more datanodes (id or address)"}
	case sub == "maintenance":
		t, perr := parseUntil(*until, time.Now())
		if perr != nil {
			return perr
		}
		r, err = e.cl.Maintenance(e.ctx, dns, t, uint32(*minRepl))
	case *until != "":
		return usageErr{"--until is for admin maintenance"}
	case sub == "decommission":
		r, err = e.cl.Decommission(e.ctx, dns)
	default:
		r, err = e.cl.Recommission(e.ctx, dns)
	}
	if err != nil {
		return &pathErr{"admin " + sub, strings.Join(dns, ","), err}
	}
	if e.json {
		return e.printJSON(map[string]any{"changed": r.GetChanged(), "index": r.GetIndex()})
	}
	if len(r.GetChanged()) == 0 {
		fmt.Fprintf(e.stdout, "%s: nothing to change\n", sub)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: %s (log index %d); see dfs cluster for progress\n", sub, strings.Join(r.Changed, " "), r.Index)
	return nil
}

// parseUntil reads --until: RFC3339, or a positive duration after now.
func parseUntil(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, usageErr{"admin maintenance wants --until TIME (RFC3339 or a duration such as 2h)"}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, usageErr{"--until " + s + ": the duration must be positive"}
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usageErr{"--until " + s + ": neither RFC3339 nor a duration"}
	}
	return t, nil
}

// adminProgress is a datanode's admin state for dfs cluster, with what it
// still waits for while it leaves.
func adminProgress(d *api.DatanodeInfo) string {
	s := d.AdminState
	if s == "" {
		s = "NORMAL"
	}
	if d.BlocksLeft > 0 {
		s += fmt.Sprintf(" (%d blocks, %s left", d.BlocksLeft, human(d.BytesLeft))
		if d.OpenFilesBlocking > 0 {
			s += fmt.Sprintf(", %d open files", d.OpenFilesBlocking)
		}
		s += ")"
	}
	if d.MaintenanceExpiryUnixMs > 0 {
		s += " until " + time.UnixMilli(d.MaintenanceExpiryUnixMs).UTC().Format(time.RFC3339)
	}
	return s
}
