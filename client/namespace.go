package client

import (
	"context"
	"iter"
	"math"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// Mkdirs creates a directory; with parents, like mkdir -p.
func (c *Client) Mkdirs(ctx context.Context, p string, perm uint32, parents bool) error {
	return c.call(ctx, "Mkdirs", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Mkdirs(ctx, &api.MkdirsRequest{Path: p, Mode: perm, Parents: parents}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// Stat returns a path's status.
func (c *Client) Stat(ctx context.Context, p string) (*api.FileStatus, error) {
	var out *api.FileStatus
	err := c.call(ctx, "GetFileInfo", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: p, Read: c.readOpts()}, trailerOpt(ctx))
		out = r.GetStatus()
		return err
	})
	return out, err
}

// List yields a directory's entries in name order, fetching pages as it
// goes. A listing error is yielded once, last.
func (c *Client) List(ctx context.Context, p string) iter.Seq2[*api.FileStatus, error] {
	return func(yield func(*api.FileStatus, error) bool) {
		after := ""
		for {
			var page *api.ListStatusResponse
			err := c.call(ctx, "ListStatus", func(ctx context.Context, nn api.ClientServiceClient) error {
				r, err := nn.ListStatus(ctx, &api.ListStatusRequest{Path: p, StartAfter: after, Read: c.readOpts()}, trailerOpt(ctx))
				page = r
				return err
			})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range page.Entries {
				if !yield(e, nil) {
					return
				}
			}
			if !page.HasMore || len(page.Entries) == 0 {
				return
			}
			after = baseName(page.Entries[len(page.Entries)-1].Path)
		}
	}
}

// Delete removes a path; a non-empty directory needs recursive.
func (c *Client) Delete(ctx context.Context, p string, recursive bool) error {
	return c.call(ctx, "Delete", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Delete(ctx, &api.DeleteRequest{Path: p, Recursive: recursive}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// Rename moves src to dst with HDFS's rules (into dst if it is a directory).
func (c *Client) Rename(ctx context.Context, src, dst string) error {
	return c.call(ctx, "Rename", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Rename(ctx, &api.RenameRequest{Src: src, Dst: dst}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// GetBlockLocations returns the blocks of p overlapping [off, off+n) (n = 0:
// to the end) and where their replicas are.
func (c *Client) GetBlockLocations(ctx context.Context, p string, off, n uint64) (*api.GetBlockLocationsResponse, error) {
	var out *api.GetBlockLocationsResponse
	err := c.call(ctx, "GetBlockLocations", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: p, Offset: off, Length: n, Read: c.readOpts()}, trailerOpt(ctx))
		out = r
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, ExpandLocations(out)
}

// ExpandLocations fills r.Blocks, one LocatedBlock per block with its
// Locations and per-block token, from the packed arrays the namenode sends.
// It allocates a few slabs, not objects per block; the DatanodeInfo values
// are shared. A malformed reply is an errs.Internal error.
func ExpandLocations(r *api.GetBlockLocationsResponse) error {
	n := len(r.BlockIds)
	bad := func(what string) error {
		return errs.Newf(errs.Internal, "client.ExpandLocations", "", "malformed reply: %s", what)
	}
	if len(r.GenStamps) != n || len(r.Lengths) != n || len(r.ReplicaCounts) != n ||
		(len(r.BlockTokens) != 0 && len(r.BlockTokens) != n) || (len(r.Crc32Cs) != 0 && len(r.Crc32Cs) != n) {
		return bad("array lengths differ")
	}
	crcs := make([]uint32, len(r.Crc32Cs))
	for i, v := range r.Crc32Cs {
		if v != 0 && v>>32 != 1 {
			return bad("a CRC entry is neither 0 nor 2^32 + a CRC32C")
		}
		crcs[i] = uint32(v)
	}
	lbs := make([]api.LocatedBlock, n)
	bs := make([]api.Block, n)
	locs := make([]*api.DatanodeInfo, len(r.ReplicaIndexes))
	for i, x := range r.ReplicaIndexes {
		if int(x) >= len(r.Datanodes) {
			return bad("replica index outside the datanode table")
		}
		locs[i] = r.Datanodes[x]
	}
	r.Blocks = make([]*api.LocatedBlock, n)
	off, next := r.FirstOffset, 0
	for i := range n {
		bs[i] = api.Block{Id: r.BlockIds[i], GenStamp: r.GenStamps[i], Length: r.Lengths[i]}
		if len(crcs) == n && r.Crc32Cs[i] != 0 {
			bs[i].Crc32C = &crcs[i]
		}
		c := int(r.ReplicaCounts[i])
		if c > len(locs)-next {
			return bad("replica counts exceed the replica indexes")
		}
		if r.Lengths[i] > math.MaxUint64-off {
			return bad("block offsets pass 2^64")
		}
		lb := &lbs[i]
		lb.Block, lb.Offset, lb.Locations = &bs[i], off, locs[next:next+c:next+c]
		if len(r.BlockTokens) == n {
			lb.Token = r.BlockTokens[i]
		}
		r.Blocks[i] = lb
		off += r.Lengths[i]
		next += c
	}
	return nil
}

// FindLeader asks the cluster which namenode leads and sends later calls
// there first. Any namenode serves reads correctly, but a follower needs a
// round trip to the leader for each linearizable read and forwards every
// write, so a client that talks to the leader is faster.
func (c *Client) FindLeader(ctx context.Context) error {
	st, err := c.ClusterStatus(ctx)
	if err != nil {
		return err
	}
	if st.LeaderAddr == "" {
		return errs.New(errs.Unavailable, "client.Client.FindLeader", "", "the cluster has no leader")
	}
	c.current.Store(st.LeaderAddr)
	return nil
}

// ClusterStatus returns the namenodes' view of the cluster.
func (c *Client) ClusterStatus(ctx context.Context) (*api.ClusterStatusResponse, error) {
	var out *api.ClusterStatusResponse
	err := c.call(ctx, "ClusterStatus", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.ClusterStatus(ctx, &api.ClusterStatusRequest{}, trailerOpt(ctx))
		out = r
		return err
	})
	return out, err
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
