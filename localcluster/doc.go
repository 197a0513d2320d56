// Package localcluster runs a blockfs cluster inside one process: N
// namenodes (a Raft cluster) on 127.0.0.1 with ephemeral ports and temporary
// data directories. Tests and `loadgen --local` use it.
package localcluster
