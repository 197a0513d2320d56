package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
)

type replicaJSON struct {
	Datanode string `json:"datanode"`
	Addr     string `json:"addr"`
	State    string `json:"state"` // live, dead, or unknown (not in the namenode's registry)
}

type blockJSON struct {
	Index    int           `json:"index"`
	BlockID  uint64        `json:"block_id"`
	GenStamp uint64        `json:"gen_stamp"`
	Offset   uint64        `json:"offset"`
	Length   uint64        `json:"length"`
	Live     int           `json:"live"`
	Want     uint32        `json:"replication"`
	Corrupt  bool          `json:"corrupt,omitempty"`
	Replicas []replicaJSON `json:"replicas"`
}

type locationsJSON struct {
	Path              string      `json:"path"`
	InodeID           uint64      `json:"inode_id"`
	Length            uint64      `json:"length"`
	UnderConstruction bool        `json:"under_construction,omitempty"`
	TokenMode         string      `json:"token_mode,omitempty"`
	Blocks            []blockJSON `json:"blocks"`
}

// cmdLocations prints each block of a file, its replicas, and whether each
// replica's datanode is live in the namenode's registry right now.
func cmdLocations(e *env, _ *flag.FlagSet, args []string) error {
	p := args[0]
	if err := checkPath("locations", p); err != nil {
		return err
	}
	st, err := e.cl.Stat(e.ctx, p)
	if err != nil {
		return &pathErr{"locations", p, err}
	}
	if st.IsDir {
		return &pathErr{"locations", p, fmt.Errorf("is a directory")}
	}
	locs, err := e.cl.GetBlockLocations(e.ctx, p, 0, 0)
	if err != nil {
		return &pathErr{"locations", p, err}
	}
	states := map[string]string{}
	cs, err := e.cl.ClusterStatus(e.ctx)
	if err == nil {
		for _, d := range cs.Datanodes {
			states[d.Id] = d.State
		}
	}
	out := locationsJSON{Path: p, InodeID: locs.InodeId, Length: locs.FileLength, UnderConstruction: locs.UnderConstruction,
		TokenMode: cs.GetTokenMode(), Blocks: []blockJSON{}}
	for i, lb := range locs.Blocks {
		b := blockJSON{Index: i, BlockID: lb.Block.Id, GenStamp: lb.Block.GenStamp, Offset: lb.Offset, Length: lb.Block.Length,
			Want: st.Replication, Corrupt: lb.Corrupt, Replicas: []replicaJSON{}}
		for _, d := range lb.Locations {
			s := d.State
			if known, ok := states[d.Id]; ok {
				s = known
			} else if cs != nil {
				s = "unknown"
			}
			if s == "" {
				s = "live"
			}
			if s == "live" {
				b.Live++
			}
			b.Replicas = append(b.Replicas, replicaJSON{Datanode: d.Id, Addr: d.Addr, State: s})
		}
		out.Blocks = append(out.Blocks, b)
	}
	if e.json {
		return e.printJSON(out)
	}
	fmt.Fprintf(e.stdout, "%s: inode %d, %d bytes, %d blocks, replication %d\n", p, out.InodeID, out.Length, len(out.Blocks), st.Replication)
	tw := e.table()
	fmt.Fprintln(tw, "BLOCK\tID\tGENSTAMP\tOFFSET\tLENGTH\tLIVE\tREPLICAS")
	for _, b := range out.Blocks {
		var reps []string
		for _, r := range b.Replicas {
			reps = append(reps, fmt.Sprintf("%s@%s(%s)", r.Datanode, r.Addr, r.State))
		}
		live := fmt.Sprintf("%d/%d", b.Live, b.Want)
		if b.Corrupt {
			live += " CORRUPT"
		} else if b.Live == 0 {
			live += " MISSING"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\t%s\n", b.Index, b.BlockID, b.GenStamp, b.Offset, b.Length, live, strings.Join(reps, " "))
	}
	return tw.Flush()
}

type clusterJSON struct {
	LeaderID     string              `json:"leader_id"`
	LeaderAddr   string              `json:"leader_addr"`
	Term         uint64              `json:"term"`
	AppliedIndex uint64              `json:"applied_index"`
	CommitIndex  uint64              `json:"commit_index"`
	ServedBy     string              `json:"served_by"`
	TokenMode    string              `json:"token_mode"`
	Members      []*api.Member       `json:"members"`
	Datanodes    []*api.DatanodeInfo `json:"datanodes"`
	Capacity     uint64              `json:"capacity"`
	Used         uint64              `json:"used"`
	LiveDNs      int                 `json:"live_datanodes"`
	DeadDNs      int                 `json:"dead_datanodes"`
}

func cmdCluster(e *env, _ *flag.FlagSet, _ []string) error {
	cs, err := e.cl.ClusterStatus(e.ctx)
	if err != nil {
		return &pathErr{"cluster", "", err}
	}
	out := clusterJSON{LeaderID: cs.LeaderId, LeaderAddr: cs.LeaderAddr, Term: cs.Term, AppliedIndex: cs.AppliedIndex,
		CommitIndex: cs.CommitIndex, ServedBy: cs.ServedBy, TokenMode: cs.TokenMode, Members: cs.Members, Datanodes: cs.Datanodes}
	for _, d := range cs.Datanodes {
		if d.State == "live" {
			out.LiveDNs++
			out.Capacity += d.Capacity
			out.Used += d.Used
		} else {
			out.DeadDNs++
		}
	}
	if out.Members == nil {
		out.Members = []*api.Member{}
	}
	if out.Datanodes == nil {
		out.Datanodes = []*api.DatanodeInfo{}
	}
	if e.json {
		return e.printJSON(out)
	}
	tw := e.table()
	fmt.Fprintf(tw, "leader:\t%s (%s)\n", cs.LeaderId, cs.LeaderAddr)
	fmt.Fprintf(tw, "term:\t%d\n", cs.Term)
	fmt.Fprintf(tw, "commit / applied:\t%d / %d (served by %s)\n", cs.CommitIndex, cs.AppliedIndex, cs.ServedBy)
	mode := cs.TokenMode
	if mode == "" {
		mode = "(not reported)"
	}
	fmt.Fprintf(tw, "token mode:\t%s\n", mode)
	fmt.Fprintf(tw, "datanodes:\t%d live, %d dead\n", out.LiveDNs, out.DeadDNs)
	fmt.Fprintf(tw, "space (live):\t%s used of %s (%s free)\n", human(out.Used), human(out.Capacity), human(out.Capacity-min(out.Used, out.Capacity)))
	tw.Flush()
	fmt.Fprintln(e.stdout)
	tw = e.table()
	fmt.Fprintln(tw, "MEMBER\tROLE\tVOTER\tGRPC\tRAFT\tHTTP")
	for _, m := range cs.Members {
		role := "follower"
		if m.Leader {
			role = "leader"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\n", m.Id, role, m.Voter, m.GrpcAddr, m.RaftAddr, m.HttpAddr)
	}
	tw.Flush()
	fmt.Fprintln(e.stdout)
	tw = e.table()
	fmt.Fprintln(tw, "DATANODE\tSTATE\tADMIN\tRACK\tADDR\tUSED\tCAPACITY\tFAILED VOLUMES\tLAST HEARTBEAT")
	for _, d := range cs.Datanodes {
		hb := "-"
		if d.LastHeartbeatUnixMs > 0 {
			hb = time.Since(time.UnixMilli(d.LastHeartbeatUnixMs)).Round(time.Millisecond).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.Id, d.State, adminProgress(d), rackOr(d.Rack), d.Addr, human(d.Used), human(d.Capacity), d.FailedVolumes, hb)
	}
	return tw.Flush()
}

func human(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

type fsckJSON struct {
	Path    string             `json:"path"`
	Healthy bool               `json:"healthy"`
	Report  *client.FsckReport `json:"report"`
}

func cmdFsck(e *env, _ *flag.FlagSet, args []string) error {
	p := "/"
	if len(args) > 0 {
		p = args[0]
	}
	if err := checkPath("fsck", p); err != nil {
		return err
	}
	rep, err := e.cl.Fsck(e.ctx, p)
	if err != nil {
		return &pathErr{"fsck", p, err}
	}
	if e.json {
		if err := e.printJSON(fsckJSON{Path: p, Healthy: rep.Healthy(), Report: rep}); err != nil {
			return err
		}
	} else {
		if len(rep.Problems) > 0 {
			tw := e.table()
			fmt.Fprintln(tw, "PATH\tBLOCK\tID\tLIVE\tPROBLEM")
			for _, b := range rep.Problems {
				what := "UNDER-REPLICATED"
				switch {
				case b.Corrupt:
					what = "CORRUPT"
				case b.Missing && rep.SafeMode:
					what = "NOT REPORTED YET (safe mode)"
				case b.MisReplicated && !b.Under:
					what = "MIS-REPLICATED (one rack)"
				case b.Missing:
					what = "MISSING"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d/%d\t%s\n", b.Path, b.Index, b.Block.GetId(), b.Live, b.Want, what)
			}
			tw.Flush()
			fmt.Fprintln(e.stdout)
		}
		tw := e.table()
		fmt.Fprintf(tw, "path:\t%s\n", p)
		fmt.Fprintf(tw, "directories:\t%d\n", rep.Dirs)
		fmt.Fprintf(tw, "files:\t%d (%d under construction, not checked)\n", rep.Files, rep.UnderConstruction)
		fmt.Fprintf(tw, "bytes:\t%d\n", rep.TotalBytes)
		fmt.Fprintf(tw, "blocks:\t%d\n", rep.Blocks)
		fmt.Fprintf(tw, "missing blocks:\t%d\n", rep.Missing)
		fmt.Fprintf(tw, "corrupt blocks:\t%d\n", rep.Corrupt)
		fmt.Fprintf(tw, "under-replicated blocks:\t%d\n", rep.Under)
		fmt.Fprintf(tw, "mis-replicated blocks:\t%d (replicas in one rack)\n", rep.MisReplicated)
		status := "HEALTHY"
		switch {
		case rep.Corrupt > 0 || rep.Missing > 0 && !rep.SafeMode:
			status = "CORRUPT"
		case rep.Missing > 0:
			status = "UNKNOWN: the namenode is in safe mode; blocks without replicas may not be reported yet"
		}
		if rep.SafeMode {
			fmt.Fprintf(tw, "safe mode:\t%s\n", rep.SafeModeMessage)
		}
		fmt.Fprintf(tw, "status:\t%s\n", status)
		tw.Flush()
	}
	if rep.Corrupt > 0 || rep.Missing > 0 && !rep.SafeMode {
		fmt.Fprintf(e.stderr, "dfs: fsck %s: %d missing, %d corrupt blocks\n", p, rep.Missing, rep.Corrupt)
		e.failed = true
	}
	return nil
}

// rackOr is rack, or /default-rack for a namenode that sent none.
func rackOr(rack string) string {
	if rack == "" {
		return "/default-rack"
	}
	return rack
}
