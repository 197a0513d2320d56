package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/blockfs/blockfs/api"
)

// cmdAdmin runs the superuser's cluster commands: the replicated deny list
// (docs/SECURITY.md, "Revoking a certificate").
//
//	dfs admin revoke   --serial S | --fingerprint F | --identity ROLE:NAME [--reason R]
//	dfs admin unrevoke --serial S | --fingerprint F | --identity ROLE:NAME
//	dfs admin revoked
//	dfs admin safemode get|enter|leave|wait
//	dfs admin decommission|recommission DN..., maintenance DN... --until T, refreshNodes (adminstate.go)
//	dfs admin allowSnapshot|disallowSnapshot DIR... (hsnapshot.go)
func cmdAdmin(e *env, _ *flag.FlagSet, args []string) error {
	sub, rest := args[0], args[1:]
	switch sub {
	case "safemode":
		if len(rest) != 1 {
			return usageErr{"admin safemode wants one of get, enter, leave, wait"}
		}
		return safeMode(e, rest[0])
	case "revoked":
		if len(rest) != 0 {
			return usageErr{"admin revoked takes no arguments"}
		}
		return listRevoked(e)
	case "decommission", "recommission", "maintenance", "refreshNodes":
		return adminState(e, sub, rest)
	case "allowSnapshot", "disallowSnapshot":
		return snapshottable(e, sub, rest) // hsnapshot.go
	case "revoke", "unrevoke":
	default:
		return usageErr{fmt.Sprintf("unknown admin command %q (revoke, unrevoke, revoked, safemode, decommission, recommission, maintenance, refreshNodes, allowSnapshot, disallowSnapshot)", sub)}
	}
	fs := flag.NewFlagSet("dfs admin "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	serial := fs.String("serial", "", "certificate serial number, hex (as `openssl x509 -serial` prints it)")
	fp := fs.String("fingerprint", "", "SHA-256 fingerprint of the certificate, hex (blockfs-certs fingerprint CERT.pem)")
	ident := fs.String("identity", "", "ROLE:NAME, e.g. namenode:nn2 or user:alice: every certificate naming it")
	reason := fs.String("reason", "", "why (kept with the entry)")
	if err := fs.Parse(rest); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageErr{"unexpected arguments: " + strings.Join(fs.Args(), " ")}
	}
	entry := &api.RevokedEntry{Serial: *serial, Fingerprint: *fp, Reason: *reason}
	if *ident != "" {
		role, name, ok := strings.Cut(*ident, ":")
		if !ok {
			return usageErr{"--identity wants ROLE:NAME"}
		}
		entry.Role, entry.Name = role, name
	}
	given := 0
	for _, v := range []string{*serial, *fp, *ident} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return usageErr{"give exactly one of --serial, --fingerprint, --identity"}
	}
	var idx uint64
	var err error
	if sub == "revoke" {
		idx, err = e.cl.Revoke(e.ctx, entry)
	} else {
		idx, err = e.cl.Unrevoke(e.ctx, entry)
	}
	if err != nil {
		return &pathErr{"admin " + sub, "", err}
	}
	if e.json {
		return e.printJSON(map[string]uint64{"index": idx})
	}
	fmt.Fprintf(e.stdout, "%sd at log index %d\n", sub, idx)
	return nil
}

type revokedJSON struct {
	What      string `json:"what"`
	RevokedBy string `json:"revoked_by"`
	RevokedAt string `json:"revoked_at"`
	Reason    string `json:"reason,omitempty"`
}

func listRevoked(e *env) error {
	list, err := e.cl.ListRevoked(e.ctx)
	if err != nil {
		return &pathErr{"admin revoked", "", err}
	}
	out := make([]revokedJSON, 0, len(list))
	for _, r := range list {
		what := "identity " + r.Role + ":" + r.Name
		switch {
		case r.Serial != "":
			what = "serial " + r.Serial
		case r.Fingerprint != "":
			what = "sha256 " + r.Fingerprint
		}
		out = append(out, revokedJSON{What: what, RevokedBy: r.RevokedBy, Reason: r.Reason,
			RevokedAt: time.UnixMilli(r.RevokedUnixMs).UTC().Format(time.RFC3339)})
	}
	if e.json {
		return e.printJSON(out)
	}
	tw := e.table()
	fmt.Fprintln(tw, "REVOKED\tBY\tAT\tREASON")
	for _, r := range out {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.What, r.RevokedBy, r.RevokedAt, r.Reason)
	}
	return tw.Flush()
}

// safeMode runs dfs admin safemode ACTION: get, enter and leave as HDFS's
// dfsadmin does; wait polls until the leader is out of safe mode (or the
// --timeout passes).
func safeMode(e *env, action string) error {
	act, ok := map[string]api.SafeModeAction{
		"get": api.SafeModeAction_SAFE_MODE_GET, "wait": api.SafeModeAction_SAFE_MODE_GET,
		"enter": api.SafeModeAction_SAFE_MODE_ENTER, "leave": api.SafeModeAction_SAFE_MODE_LEAVE,
	}[action]
	if !ok {
		return usageErr{fmt.Sprintf("admin safemode %q: want get, enter, leave or wait", action)}
	}
	for {
		st, err := e.cl.SafeMode(e.ctx, act)
		if err != nil {
			return &pathErr{"admin safemode " + action, "", err}
		}
		if action != "wait" || !st.On {
			if e.json {
				return e.printJSON(st)
			}
			fmt.Fprintf(e.stdout, "%s (leader %s, %d of %d blocks reported)\n", st.Message, st.ServedBy, st.SafeBlocks, st.TotalBlocks)
			return nil
		}
		select {
		case <-e.ctx.Done():
			return &pathErr{"admin safemode wait", "", e.ctx.Err()}
		case <-time.After(500 * time.Millisecond):
		}
	}
}
