#!/bin/sh
# seaweed.sh runs SeaweedFS's own small-file benchmark beside
# bench/smallfiles, as issue 25 compares them: a master and three volume
# servers on 127.0.0.1 only, then `weed benchmark -c CLIENTS -n FILES
# -size 1024 -replication 002 -fsync` (three copies; -fsync has the volume
# servers fsync each write before answering it). No test runs it.
#
#   bench/smallfiles/seaweed.sh WEED [FILES] [CLIENTS]
#
# WEED is a weed binary. To build the version the issue names (its go.mod
# has a replace directive, so build from a writable copy):
#
#   v=v0.0.0-20261109003541-7506e5f91cd6
#   dir=$(go mod download -json github.com/seaweedfs/seaweedfs@$v | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
#   cp -r "$dir" /tmp/seaweedfs && chmod -R u+w /tmp/seaweedfs
#   (cd /tmp/seaweedfs && go build -o /tmp/weed ./weed)
#
# FSYNC=0 runs the benchmark without -fsync. WARM=N first writes and reads
# N files (not measured), so the volumes exist before the measured run: a
# fresh cluster's first writes wait about 5 s for volume growth, which
# the measured figure otherwise includes.
set -eu
weed=$1
files=${2:-20000}
clients=${3:-16}
fsync=-fsync
[ "${FSYNC:-1}" = 0 ] && fsync=
dir=$(mktemp -d /tmp/seaweed-bench.XXXXXX)
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# freeport prints a free loopback port whose +10000 (SeaweedFS's gRPC
# port) is free too.
freeport() {
	python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p + 10000 > 65535: s.close(); continue
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p + 10000))
    except OSError:
        s.close(); continue
    t.close(); s.close(); print(p); break'
}

mport=$(freeport)
mkdir -p "$dir/m"
"$weed" master -ip=127.0.0.1 -ip.bind=127.0.0.1 -port="$mport" -mdir="$dir/m" \
	-defaultReplication=002 -volumeSizeLimitMB=1024 >"$dir/master.log" 2>&1 &
pids="$pids $!"
sleep 2
for i in 1 2 3; do
	vport=$(freeport)
	mkdir -p "$dir/v$i"
	"$weed" volume -ip=127.0.0.1 -ip.bind=127.0.0.1 -port="$vport" -dir="$dir/v$i" \
		-master=127.0.0.1:"$mport" -max=30 >"$dir/v$i.log" 2>&1 &
	pids="$pids $!"
done
sleep 5
if [ "${WARM:-0}" -gt 0 ]; then
	"$weed" benchmark -c "$clients" -n "$WARM" -size 1024 -replication 002 $fsync \
		-master 127.0.0.1:"$mport" -list "$dir/warm.list" >"$dir/warm.log" 2>&1
fi
echo "SeaweedFS: master 127.0.0.1:$mport, 3 volume servers, $clients clients, $files files of 1024 B, replication 002 ${fsync:-without -fsync}${WARM:+, after $WARM warm-up files}"
"$weed" benchmark -c "$clients" -n "$files" -size 1024 -replication 002 $fsync -master 127.0.0.1:"$mport" -list "$dir/bench.list"
