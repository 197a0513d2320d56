package namenode

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namenode/locreply"

	"github.com/blockfs/blockfs/api"
)

// LoadedFile is one file LoadFiles added: its inode and its one block.
type LoadedFile struct {
	Inode uint64
	Block *api.Block
}

// LoadFiles adds files of one block of blockLen bytes each to n's
// namespace, perDir to a directory under /load, as root. It applies the
// commands a client's Mkdirs, Create, AddBlock and Complete would commit
// (so the namespace, the leases and the block map's expected replicas are
// what those calls leave), through the FSM's own apply (fsm.ApplyUnlogged),
// but without a Raft log: a benchmark fixture gets a namenode
// holding a namespace of realistic size in seconds rather than the minutes
// Raft would take. Only for a single-node cluster, whose state no follower
// has to match.
func LoadFiles(n *Namenode, files, perDir int, blockLen uint64) ([]LoadedFile, error) {
	f := n.fsm
	caller := &api.Caller{User: n.cfg.Namespace.Superuser, ClientId: "load-files"}
	out := make([]LoadedFile, 0, files)
	for i := range files {
		dir := fmt.Sprintf("/load/d%06d", i/perDir)
		path := fmt.Sprintf("%s/f%06d", dir, i%perDir)
		lf, err := loadFile(f, caller, dir, path, i%perDir == 0, blockLen)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", path, err)
		}
		out = append(out, lf)
	}
	return out, nil
}

func loadFile(f *fsm.FSM, caller *api.Caller, dir, path string, mkdir bool, blockLen uint64) (LoadedFile, error) {
	const mtime = 1
	apply := func(t fsm.CmdType, msg proto.Message) (*api.CommandResult, error) {
		data, err := fsm.Encode(t, msg)
		if err != nil {
			return nil, err
		}
		r := f.ApplyUnlogged(data)
		return r, fsm.ResultErr(r)
	}
	if mkdir {
		if _, err := apply(fsm.CmdMkdirs, &api.MkdirsCommand{Caller: caller, Path: dir, Perm: 0o755, Parents: true, MtimeUnixMs: mtime}); err != nil {
			return LoadedFile{}, err
		}
	}
	cr, err := apply(fsm.CmdCreate, &api.CreateCommand{Caller: caller, Path: path, Perm: 0o644, Replication: 3, BlockSize: blockLen, MtimeUnixMs: mtime})
	if err != nil {
		return LoadedFile{}, err
	}
	inode := cr.Status.InodeId
	ab, err := apply(fsm.CmdAddBlock, &api.AddBlockCommand{Caller: caller, Path: path, InodeId: inode, MtimeUnixMs: mtime})
	if err != nil {
		return LoadedFile{}, err
	}
	b := ab.Block
	b.Length = blockLen
	if _, err := apply(fsm.CmdComplete, &api.CompleteCommand{Caller: caller, Path: path, InodeId: inode, Blocks: []*api.Block{b}, MtimeUnixMs: mtime}); err != nil {
		return LoadedFile{}, err
	}
	return LoadedFile{Inode: inode, Block: b}, nil
}

// ReplyCodec is the codec the namenode's gRPC server marshals replies
// with, GetBlockLocations replies going back to their pool after.
func ReplyCodec() encoding.CodecV2 { return serve.Codec(locreply.Release) }
