package namenode

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namenode/hsnapshot"
)

// snapCore is hsnapshot.Core, the HDFS snapshot door's view of the node.
type snapCore struct{ n *Namenode }

func (n *Namenode) snapshotDoor() *hsnapshot.Service { return hsnapshot.New(snapCore{n}) }

func (c snapCore) Propose(ctx context.Context, op string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, *api.ResponseHeader, error) {
	r, idx, err := c.n.propose(ctx, op, t, msg)
	if err != nil {
		return nil, nil, err
	}
	return r, c.n.writeHeader(idx), nil
}

func (c snapCore) Read(ctx context.Context, op string, o *api.ReadOptions) (*api.Caller, *api.ResponseHeader, error) {
	if err := c.n.readBarrier(ctx, op, o); err != nil {
		return nil, nil, err
	}
	return c.n.readCaller(ctx), c.n.header(), nil
}

func (c snapCore) Caller(ctx context.Context) *api.Caller { return c.n.caller(ctx) }
func (c snapCore) NowMs() int64                           { return c.n.nowMs() }
func (c snapCore) FSM() *fsm.FSM                          { return c.n.fsm }
func (c snapCore) Audited(ctx context.Context, cmd, src, dst string, err error) {
	c.n.audited(ctx, cmd, src, dst, nil, err)
}
