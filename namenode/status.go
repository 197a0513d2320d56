package namenode

import (
	"context"
	"sort"
	"strconv"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode/locreply"
	"github.com/blockfs/blockfs/security"
)

// clusterStatus reports the Raft view and the datanodes as this node sees
// them.
func (n *Namenode) clusterStatus(ctx context.Context) (*api.ClusterStatusResponse, error) {
	addr, leaderID := n.raft.LeaderWithID()
	_ = addr
	out := &api.ClusterStatusResponse{
		LeaderId:     string(leaderID),
		LeaderAddr:   n.leaderGRPC(),
		Term:         n.raft.CurrentTerm(),
		AppliedIndex: n.fsm.AppliedIndex(),
		CommitIndex:  n.raft.CommitIndex(),
		ServedBy:     n.cfg.ID,
		TokenMode:    n.cfg.Tokens.Mode.String(),
	}
	out.TrashIntervalMs = n.cfg.TrashInterval.Milliseconds()
	if id, ok := security.IdentityFromContext(ctx); ok {
		out.Caller = id.Name
	}
	if st := n.SafeMode(); st.On {
		out.SafeMode, out.SafeModeMessage = true, st.Message
	}
	members := n.fsm.Members()
	if cf := n.raft.GetConfiguration(); cf.Error() == nil {
		for _, s := range cf.Configuration().Servers {
			m := &api.Member{Id: string(s.ID), RaftAddr: string(s.Address), Voter: s.Suffrage == raft.Voter}
			if known := members[m.Id]; known != nil {
				m.GrpcAddr, m.HttpAddr = known.GrpcAddr, known.HttpAddr
			}
			m.Leader = s.ID == leaderID
			out.Members = append(out.Members, m)
		}
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].Id < out.Members[j].Id })
	for _, d := range n.blocks.Datanodes() {
		info := locreply.DatanodeInfo(d)
		n.decom.Fill(info, d)
		out.Datanodes = append(out.Datanodes, info)
	}
	return out, nil
}

// raftStats returns numeric Raft stats for metrics.
func (n *Namenode) raftStats() (state raft.RaftState, term, commit, applied, lastLog uint64) {
	if n.raft == nil {
		return raft.Shutdown, 0, 0, 0, 0
	}
	st := n.raft.Stats()
	lastLog, _ = strconv.ParseUint(st["last_log_index"], 10, 64)
	return n.raft.State(), n.raft.CurrentTerm(), n.raft.CommitIndex(), n.fsm.AppliedIndex(), lastLog
}
