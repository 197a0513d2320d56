// Package netfault is blockfs's fault harness of real processes in
// network namespaces (issue 24): 3 namenodes and the datanodes run as
// separate processes (tests/crashtest's binaries, through
// internal/testutil/nodeproc), each in a network namespace of its own
// joined to one bridge by a veth pair (Net), with addresses only inside
// namespaces the test made; the test's clients dial from a client
// namespace of their own. Faults are nftables drop rules inside the
// namespaces (a partition of any two sets of hosts, or one way), and
// SIGSTOP/SIGCONT and SIGKILL of processes.
//
// The tests need root, ip and nft; without them they skip, saying why.
// What runs today: TestFaults, the robustness workload through five faults
// around the leader (cut from its peers only, isolated, deaf one way, a
// bridge, paused), each checked for linearizability with tests/robustness's
// model, lost writes and convergence (docs/RELIABILITY.md). The
// rest of the issue (a seeded nemesis over every fault kind, slow links,
// full disks, token checks, figures and the long run) is to come.
package netfault
