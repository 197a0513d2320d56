package main

import (
	"context"
	"fmt"
	"math"
	"os/user"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/hadoopipc"
	"github.com/blockfs/blockfs/hdfsrpc"
)

// DoorHDFS is the namenode's Hadoop IPC door, timed with an HDFS client's
// calls (hadoopipc.Client, ClientProtocol.getBlockLocations).
const DoorHDFS = "hdfs"

// doorsOf is the doors --protocol names, in sweep order.
func doorsOf(protocol string) ([]string, error) {
	switch protocol {
	case "grpc":
		return []string{DoorGRPC}, nil
	case "hdfs":
		return []string{DoorHDFS}, nil
	case "both":
		return []string{DoorGRPC, DoorHDFS}, nil
	}
	return nil, usagef("--protocol %q: want grpc, hdfs or both", protocol)
}

// hasDoor reports whether o sweeps door.
func (o Options) hasDoor(door string) bool { return slices.Contains(o.Doors, door) }

// floorName is what a door's floor times.
func floorName(door string) string {
	if door == DoorHDFS {
		return "getServerDefaults"
	}
	return "health check"
}

// hdfsUser is the user the HDFS door's connections name: --user, else
// root on a --local cluster (as its gRPC client), else the OS user.
func hdfsUser(o Options) string {
	switch {
	case o.User != "":
		return o.User
	case o.Local:
		return "root"
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

// dialHDFS connects t to the HDFS door that serves first: the one at the
// gRPC namenode's index in addrs when the lists line up (the door of the
// namenode the gRPC series times), else the first that answers.
func (t *modeTarget) dialHDFS(ctx context.Context, o Options, grpcAddrs, addrs []string, first string, blocks int) error {
	order := slices.Clone(addrs)
	if i := slices.Index(grpcAddrs, t.nn); i >= 0 && len(grpcAddrs) == len(addrs) {
		order = append([]string{addrs[i]}, slices.Delete(order, i, i+1)...)
	}
	var errs []string
	for _, a := range order {
		if a == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, o.ConnTimeout)
		c, err := hadoopipc.Dial(cctx, a, hdfsUser(o), hdfsrpc.Protocol)
		if err == nil {
			err = hdfsLocate(cctx, c, first, blocks)
			if err != nil {
				c.Close()
			}
		}
		cancel()
		if err == nil {
			t.hdfs, t.hdfsAddr = c, a
			return nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", a, err))
	}
	if len(errs) == 0 {
		return usagef("no HDFS door addresses (--hdfs-namenodes)")
	}
	return usagef("no HDFS door answered getBlockLocations for %s: %s", first, strings.Join(errs, "; "))
}

// hdfsLocate is one timed call through the HDFS door: getBlockLocations
// of the whole file, decoded into LocatedBlocksProto as an HDFS client
// decodes it, with every block's token checked present (the client hands
// it to the datanode).
func hdfsLocate(ctx context.Context, c *hadoopipc.Client, p string, want int) error {
	req := &hdfs.GetBlockLocationsRequestProto{Src: proto.String(p), Offset: proto.Uint64(0), Length: proto.Uint64(math.MaxInt64)}
	var resp hdfs.GetBlockLocationsResponseProto
	if err := c.Call(ctx, "getBlockLocations", req, &resp); err != nil {
		return err
	}
	bs := resp.GetLocations().GetBlocks()
	if len(bs) != want {
		return fmt.Errorf("%s: %d blocks located through the HDFS door, want %d", p, len(bs), want)
	}
	for i, b := range bs {
		if len(b.GetBlockToken().GetIdentifier()) == 0 || len(b.GetLocs()) == 0 {
			return fmt.Errorf("%s: block %d has no token or no location", p, i)
		}
	}
	return nil
}

// hdfsFloor is the HDFS door's floor: getServerDefaults, the cheapest
// call of ClientProtocol, through the same connection.
func hdfsFloor(ctx context.Context, c *hadoopipc.Client) error {
	var resp hdfs.GetServerDefaultsResponseProto
	return c.Call(ctx, "getServerDefaults", &hdfs.GetServerDefaultsRequestProto{}, &resp)
}
