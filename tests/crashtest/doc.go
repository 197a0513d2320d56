// Package crashtest is blockfs's process-level crash suite (issue 6, part 2).
//
// The test builds the real namenode and datanode binaries, starts 3
// namenodes and 5 datanodes (encrypted at rest) as child processes on
// loopback, and runs writers that create files through the Go client while
// a chaos loop SIGKILLs a random namenode or datanode and restarts it with
// the same flags and data directory. At the end every file whose write the
// client saw complete must read back byte-identical (each file's content is
// derived from its name, see Content), the namenodes must agree (applied
// indexes converge and a stale listing of the whole namespace is the same on
// each), and fsck must report no missing or corrupt block once
// re-replication settles.
//
// Run it with
//
//	go test ./tests/crashtest           # ~30 s of chaos
//	go test -short ./tests/crashtest    # ~8 s
//	BLOCKFS_CRASH_DURATION=5m go test -timeout 20m ./tests/crashtest
//
// The package holds no production code: only Content, the file-content
// generator, which the soak and other suites may share.
package crashtest
