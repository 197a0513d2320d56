// Package locreply builds GetBlockLocations replies without allocating at
// steady state: pooled replies whose arrays and datanode entries are reused
// (reply.go), and a request's scratch that numbers the datanodes a reply
// names once each (table.go). The namenode fills them under the FSM's read
// lock; the gRPC codec hands each reply back through Release once it is
// marshaled.
package locreply
