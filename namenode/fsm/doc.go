// Package fsm is the namenode's replicated state machine: the namespace
// tree, the member table, the token-signing public keys, the retry cache,
// the lease table and the certificate deny list (revoke.go), changed only
// by applying Raft log entries.
//
// A log entry is one command: a type byte (CmdType) and a protobuf
// message (api/fsm.proto), or a CmdBatch of such commands; the framing is
// in docs/FORMATS.md. Every input a command needs (times, the caller, the
// leader's lease limits) is in the command, so every namenode computes the
// same state. Dispatch is one table (commands.go); the prologue every
// command shares, the retry cache's answer to a named call already
// applied, is written once (FSM.applyOne). A command that fails has its
// error in its result; none stops the state machine.
//
// Snapshots (snapshot.go) are taken under the write lock in microseconds
// and streamed by Persist with no lock held, from a copy-on-write view of
// the namespace; Restore decodes into a fresh state and swaps it in only
// when the whole stream decoded. SnapshotStore is raft's file snapshot
// store with gentle reaping and write-back (snapfiles.go, persist.go).
//
// Readers never see the lock or the state: View gives a Reader under the
// read lock, and Member, Members, Counts, Hash, PublicKeys and the other
// queries take it themselves.
package fsm
