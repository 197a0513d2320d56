// Package balancer evens out datanode utilisation, as HDFS's balancer
// does, without ever lowering a block's replication or breaking the rack
// policy.
//
// # The plan
//
// PlanMoves is a pure function of the datanodes' utilisations, their
// racks and the blocks on the source datanodes. With mean the cluster's
// used/capacity and t the threshold (percentage points), a datanode with
// utilisation u is over-utilised if u > mean+t, above average if
// mean < u <= mean+t, below average if mean-t <= u < mean and
// under-utilised if u < mean-t; the cluster is balanced when none is over-
// or under-utilised. A source may give, and a target take, its distance
// from the mean in bytes, capped per iteration. Sources and targets are
// paired in HDFS's order: over-utilised with under-utilised, then with
// below average, then above average with under-utilised, each first within
// a rack and then across racks. For a pair, the source's blocks are taken
// in order when the target holds no replica, both budgets cover the block,
// the block is not already planned, and the block's holders with the
// source replaced by the target keep the rack policy of blocks/placement.go
// (at least two racks when the cluster has more, at most
// (replicas-1)/racks + 2 in one rack).
//
// # The run
//
// A Runner, one per namenode and used only on the leader, runs one
// balancing at a time (Start refuses a second, naming who started the
// first): each iteration reads the datanodes and the movable blocks of the
// sources from the block map, plans, starts the moves through
// blocks.Manager.StartMove (which copies, verifies and only then deletes;
// see blocks/move.go) paced at the run's bandwidth, and waits for them to
// finish. It re-plans from the current block map every iteration, so a run
// can stop anywhere and a new one, on this leader or the next, carries on.
// It ends balanced, or failed with a reason: the iteration limit, no move
// possible, safe mode, lost leadership, or stopped.
package balancer
