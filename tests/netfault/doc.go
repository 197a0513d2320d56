// Package netfault is blockfs's fault harness of real processes in
// network namespaces (issue 24): 3 namenodes and 5 datanodes run as
// separate processes (tests/crashtest's binaries, through
// internal/testutil/nodeproc), each in a network namespace of its own
// joined to one bridge by a veth pair (Net), with addresses only inside
// namespaces the test made; the test's clients dial from a client
// namespace of their own. The datanodes and the client library reach the
// namenodes through userspace proxies on their own hosts (Proxy: latency
// and a byte rate, since the kernel here has no netem), and each datanode
// keeps its data on a tmpfs of its own.
//
// Faults (kinds_test.go): nftables drop rules inside the namespaces (the
// leader cut from its peers while clients still reach it, isolated, a
// majority/minority split, one way, a bridge, datanodes cut from the
// leader), SIGSTOP/SIGCONT of the leader or a datanode, kill -9 and
// restart of any node (never below a quorum or three datanodes), a full
// disk, and slow links.
//
// TestFaults takes five partitions around the leader one at a time.
// TestNemesis injects a seeded random schedule of every kind under four
// checked workloads: the namespace workload (porcupine, tests/robustness's
// model, one history per fault), an hflush writer with readers (the
// visible-length model), whole-file writers read back byte for byte, and a
// token checker (no token from a namenode cut off from its peers, no
// expired token accepted). After the heal the namenodes must agree on one
// namespace hash at one applied index (Admin.NamespaceHash) and fsck must
// find full replication. It reports availability per fault against the
// run's own no-fault stretches, the longest stall and the time from heal
// to full replication; -duration, -faults, -seed, -summary and -plot are
// its flags (docs/RELIABILITY.md).
//
// The tests need root, ip, nft and tmpfs mounts; without them they skip,
// saying why, and .ci/run installs what they need.
package netfault
