package client

import (
	"context"

	"github.com/blockfs/blockfs/api"
)

// FsckBlock is one block with a problem.
type FsckBlock struct {
	Path  string // the file
	Index int    // the block's position in the file
	Block *api.Block
	// Live is the number of live replicas; Want is the file's replication.
	Live, Want int
	Missing    bool // no live replica
	Corrupt    bool // every known replica is corrupt
	Under      bool // fewer live replicas than the file's replication
	// MisReplicated: its live replicas, more than one, sit in one rack of
	// a cluster with more (the placement policy wants two at least).
	MisReplicated bool
}

// FsckReport summarizes a walk.
type FsckReport struct {
	Dirs              int         `json:"dirs"`
	Files             int         `json:"files"`
	Blocks            int         `json:"blocks"`
	Missing           int         `json:"missing"`
	Corrupt           int         `json:"corrupt"`
	Under             int         `json:"under_replicated"`
	MisReplicated     int         `json:"mis_replicated"`
	UnderConstruction int         `json:"under_construction"`
	Problems          []FsckBlock `json:"problems"`
	TotalBytes        uint64      `json:"total_bytes"`
	racks             int         // racks with a live datanode, from ClusterStatus
	// SafeMode is set when the namenode that answered was in safe mode:
	// its block map was still filling, so a block without a replica may
	// only not be reported yet. SafeModeMessage says how far it is.
	SafeMode        bool   `json:"safe_mode"`
	SafeModeMessage string `json:"safe_mode_message,omitempty"`
}

// Healthy reports whether no block is missing or corrupt.
func (r *FsckReport) Healthy() bool { return r.Missing == 0 && r.Corrupt == 0 }

// Fsck walks the tree under root (a file or a directory) and checks every
// block of every file against the namenode's block map: missing (no live
// replica), corrupt (every replica corrupt) and under-replicated (fewer
// live replicas than the file's replication). Files under construction are
// counted but not checked. An error stops the walk.
func (c *Client) Fsck(ctx context.Context, root string) (*FsckReport, error) {
	rep := &FsckReport{}
	racks := map[string]bool{}
	if cs, err := c.ClusterStatus(ctx); err == nil {
		rep.SafeMode, rep.SafeModeMessage = cs.SafeMode, cs.SafeModeMessage
		for _, d := range cs.Datanodes {
			if d.State == "live" {
				racks[d.Rack] = true
			}
		}
	}
	rep.racks = len(racks)
	st, err := c.Stat(ctx, root)
	if err != nil {
		return nil, err
	}
	if err := c.fsck(ctx, st, rep); err != nil {
		return rep, err
	}
	return rep, nil
}

func (c *Client) fsck(ctx context.Context, st *api.FileStatus, rep *FsckReport) error {
	if st.IsDir {
		rep.Dirs++
		for e, err := range c.List(ctx, st.Path) {
			if err != nil {
				return err
			}
			if err := c.fsck(ctx, e, rep); err != nil {
				return err
			}
		}
		return nil
	}
	rep.Files++
	rep.TotalBytes += st.Length
	if st.UnderConstruction {
		rep.UnderConstruction++
		return nil
	}
	locs, err := c.GetBlockLocations(ctx, st.Path, 0, 0)
	if err != nil {
		return err
	}
	for i, lb := range locs.Blocks {
		rep.Blocks++
		live := 0
		in := map[string]bool{}
		for _, d := range lb.Locations {
			if d.State == "" || d.State == "live" {
				live++
				in[d.Rack] = true
			}
		}
		fb := FsckBlock{Path: st.Path, Index: i, Block: lb.Block, Live: live, Want: int(st.Replication),
			Missing: live == 0 && !lb.Corrupt, Corrupt: lb.Corrupt, Under: live > 0 && live < int(st.Replication),
			MisReplicated: live > 1 && len(in) == 1 && rep.racks > 1}
		if fb.MisReplicated {
			rep.MisReplicated++
		}
		if fb.Missing {
			rep.Missing++
		}
		if fb.Corrupt {
			rep.Corrupt++
		}
		if fb.Under {
			rep.Under++
		}
		if fb.Missing || fb.Corrupt || fb.Under || fb.MisReplicated {
			rep.Problems = append(rep.Problems, fb)
		}
	}
	return nil
}
