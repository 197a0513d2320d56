package balancer

import "github.com/blockfs/blockfs/api"

// Proto is s as the Admin service answers it, served by namenode
// servedBy.
func (s Status) Proto(servedBy string) *api.BalancerStatus {
	out := &api.BalancerStatus{
		State: api.BalancerState(s.State), RunId: s.RunID, StartedBy: s.StartedBy, Threshold: s.Request.Threshold,
		Bandwidth: s.Request.Bandwidth, MaxIterations: uint32(s.Request.MaxIterations), Iterations: uint32(s.Iterations),
		BytesMoved: s.BytesMoved, BytesToMove: s.BytesToMove, MovesInFlight: uint32(s.InFlight), MovesDone: s.MovesDone,
		MovesDropped: s.MovesFailed, MinUtilization: s.Spread.Min, MaxUtilization: s.Spread.Max,
		MeanUtilization: s.Spread.Mean, Reason: s.Reason, ServedBy: servedBy,
	}
	if !s.StartedAt.IsZero() {
		out.StartedUnixMs = s.StartedAt.UnixMilli()
	}
	return out
}
