package blocks

import "sync/atomic"

// Refusal names a reason the namenode refused, or ignored, what a caller
// told it about datanodes and replicas. Each is counted (Manager.Refuse) and
// exported as blockfs_blocks_refused_total{reason}.
type Refusal uint8

const (
	// RefusedRegister: a registration of a live datanode id from another
	// address.
	RefusedRegister Refusal = iota
	// RefusedReport: a malformed datanode report, or one about another
	// datanode than the caller.
	RefusedReport
	// RefusedBadBlock: a ReportBadBlocks naming no replica in the map (or a
	// malformed one, or a datanode speaking for another).
	RefusedBadBlock
	// RefusedVerified: a "verified" answer to no verify this namenode is
	// waiting for.
	RefusedVerified
	// RefusedRecovery: a CommitBlockSynchronization the FSM refused: not
	// from the recovery's primary, for no recovery in progress, or below
	// the length the writer made durable.
	RefusedRecovery
	numRefusals
)

var refusalNames = [numRefusals]string{
	RefusedRegister: "register_conflict",
	RefusedReport:   "bad_report",
	RefusedBadBlock: "bad_block_report",
	RefusedVerified: "unrequested_verified",
	RefusedRecovery: "recovery_commit",
}

func (r Refusal) String() string {
	if r < numRefusals {
		return refusalNames[r]
	}
	return "unknown"
}

// refusals counts refusals by reason.
type refusals [numRefusals]atomic.Uint64

// Refuse counts one refusal of kind r. Servers call it for refusals they
// decide themselves (malformed requests); the Manager counts its own.
func (m *Manager) Refuse(r Refusal) {
	if r < numRefusals {
		m.refused[r].Add(1)
	}
}

// Refused returns how many refusals of kind r were counted.
func (m *Manager) Refused(r Refusal) uint64 {
	if r < numRefusals {
		return m.refused[r].Load()
	}
	return 0
}
