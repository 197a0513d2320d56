#!/usr/bin/env bash
# Smoke test of the docker-compose cluster (deploy/docker-compose.yml), under
# mTLS with the role certificates its `certs` service makes (SMOKE_AUTH=simple:
# under simple auth, with deploy/docker-compose.simple.yml added):
#   1. builds the static binaries and the FROM-scratch image (deploy/build.sh);
#   2. brings up 3 namenodes and 5 datanodes and waits until every one is healthy
#      and every namenode counts 5 live datanodes;
#   3. for each token mode in SMOKE_TOKEN_MODES (default per-block,per-request,cached)
#      (re)starts the namenodes in that mode and runs the compose `loadgen` service
#      (as root, by the user-root certificate):
#      loadgen --blocks 1,10,100,1000 --calls 20 --json FILE; checks the JSON has
#      4 rows for that mode, one per block count, with no errors;
#   4. round-trips a 10 MiB file through `dfs put` / `dfs get` as root (the
#      compose `dfs` service) and compares it;
#   5. refusals: the user alice may not write into root's /smoke (0755), and,
#      under mTLS, a datanode's certificate used by a client is refused
#      (ClientService admits only the user role);
#   6. on exit, whatever happened, prints the logs of failing services and tears
#      everything down, volumes (certificates included) too.
# Exits non-zero on any failure. Needs docker and Compose (v2 `docker compose` or
# v1 `docker-compose`), go, and python3 or jq.
#
# Environment: SMOKE_AUTH (mtls; or simple), SMOKE_TOKEN_MODES, SMOKE_CALLS (20), SMOKE_BLOCKS (1,10,100,1000),
# SMOKE_SKIP_BUILD=1 (reuse deploy/bin and the image), SMOKE_KEEP=1 (leave the
# cluster up for a look; tear down later with the printed command).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
deploy=$root/deploy

auth=${SMOKE_AUTH:-mtls}
modes=${SMOKE_TOKEN_MODES:-per-block,per-request,cached}
calls=${SMOKE_CALLS:-20}
blocks=${SMOKE_BLOCKS:-1,10,100,1000}
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-blockfs-smoke}
namenodes=(nn1 nn2 nn3)
datanodes=(dn1 dn2 dn3 dn4 dn5)
nn_addrs=(127.0.0.1:9001 127.0.0.1:9002 127.0.0.1:9003)
NAMENODES=$(
	IFS=,
	echo "${nn_addrs[*]}"
)
bin=$deploy/bin/rootfs/usr/local/bin

say() { printf '\n== smoke: %s\n' "$*"; }
# Checks passed and skipped, for the closing "smoke: N passed, N failed" line.
passed=0
skipped=0
pass() {
	passed=$((passed + 1))
	echo "smoke: ok: $*"
}
fail() {
	printf '\nsmoke: FAIL: %s\n' "$*" >&2
	exit 1
}

files=(-f "$deploy/docker-compose.yml")
case $auth in
mtls) ;;
simple) files+=(-f "$deploy/docker-compose.simple.yml") ;;
*) fail "SMOKE_AUTH=$auth: want mtls or simple" ;;
esac
if docker compose version >/dev/null 2>&1; then
	compose=(docker compose "${files[@]}")
elif command -v docker-compose >/dev/null 2>&1; then
	compose=(docker-compose "${files[@]}")
else
	fail "neither 'docker compose' nor 'docker-compose' is installed"
fi
docker info >/dev/null 2>&1 || fail "docker daemon not reachable (docker info failed)"
say "using $("${compose[@]}" version --short 2>/dev/null || echo compose), project $COMPOSE_PROJECT_NAME, auth $auth"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/blockfs-smoke.XXXXXX")
export BLOCKFS_OUT=$tmp/out # the loadgen service's /out
mkdir -p "$BLOCKFS_OUT"
started=0

# container ID of a compose service ("" if none)
cid() { "${compose[@]}" ps -q "$1" 2>/dev/null | head -n1; }

# state of a service's container: healthy, unhealthy, starting, running, exited(N), missing
svc_state() {
	local id
	id=$(cid "$1")
	[ -n "$id" ] || {
		echo missing
		return
	}
	docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else if .State.Running}}running{{else}}exited({{.State.ExitCode}}){{end}}' "$id" 2>/dev/null || echo missing
}

cleanup() {
	local rc=$?
	set +e
	if [ "$started" = 1 ]; then
		if [ "$rc" != 0 ]; then
			say "failed (exit $rc); service states and logs of the failing ones"
			"${compose[@]}" ps
			for s in certs "${namenodes[@]}" "${datanodes[@]}" loadgen; do
				st=$(svc_state "$s")
				case $st in
				healthy | "exited(0)" | missing) ;;
				*)
					echo "---- $s ($st): last 80 log lines"
					"${compose[@]}" logs --no-color --tail 80 "$s"
					;;
				esac
			done
		fi
		if [ "${SMOKE_KEEP:-0}" = 1 ]; then
			say "SMOKE_KEEP=1: cluster left up; tear down with: COMPOSE_PROJECT_NAME=$COMPOSE_PROJECT_NAME ${compose[*]} --profile monitoring down -v"
		else
			say "tearing down (containers and volumes)"
			"${compose[@]}" --profile monitoring down -v --remove-orphans -t 10 >/dev/null 2>&1 ||
				"${compose[@]}" down -v --remove-orphans -t 10
		fi
	fi
	rm -rf "$tmp"
	local failed=0 tally
	[ "$rc" = 0 ] || failed=1
	tally="$passed passed, $failed failed"
	[ "$skipped" = 0 ] || tally+=", $skipped skipped"
	echo "smoke: $tally"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The cluster uses host networking: its ports must be free.
for p in 9001 9002 9003 7001 7002 7003 9101 9102 9103 9201 9202 9203 9204 9205 9301 9302 9303 9304 9305; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		fail "port 127.0.0.1:$p is already in use (another blockfs cluster up? try: docker compose -f deploy/docker-compose.yml down -v)"
	fi
done

if [ "${SMOKE_SKIP_BUILD:-0}" = 1 ] && [ -x "$bin/namenode" ]; then
	say "SMOKE_SKIP_BUILD=1: reusing deploy/bin and blockfs:local"
else
	say "building binaries and image"
	"$deploy/build.sh"
fi
[ -x "$bin/loadgen" ] || fail "no loadgen binary in deploy/bin (does cmd/loadgen build?)"

# Waits until every named service is healthy, up to $1 seconds.
wait_healthy() {
	local limit=$1
	shift
	local deadline=$((SECONDS + limit)) s st bad
	while :; do
		bad=()
		for s in "$@"; do
			st=$(svc_state "$s")
			case $st in
			healthy) ;;
			exited* | missing) fail "service $s is $st" ;;
			*) bad+=("$s:$st") ;;
			esac
		done
		[ "${#bad[@]}" = 0 ] && return 0
		[ "$SECONDS" -lt "$deadline" ] || fail "not healthy after ${limit}s: ${bad[*]}"
		sleep 1
	done
}

# Every namenode knows the leader and counts all 5 datanodes live. The
# healthcheck runs inside nn1's container, where its environment holds the
# health-check identity (certificate or simple-auth name) of this mode.
wait_cluster() {
	local a id
	id=$(cid nn1)
	[ -n "$id" ] || fail "no nn1 container"
	for a in "${nn_addrs[@]}"; do
		docker exec "$id" healthcheck --wait 60s --leader --min-datanodes "${#datanodes[@]}" "$a" ||
			fail "namenode $a did not see a leader and ${#datanodes[@]} live datanodes within 60s"
	done
}

check_json() { # file mode
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$1" "$2" "$blocks" <<'PY'
import json, math, sys
path, mode, blocks = sys.argv[1], sys.argv[2], sorted(int(b) for b in sys.argv[3].split(","))
rows = json.load(open(path))
assert isinstance(rows, list), "JSON is not an array"
modes = sorted({r["token_mode"] for r in rows})
assert modes == [mode], f"token modes {modes}, want [{mode!r}]"
glr = [r for r in rows if r.get("op", "get_block_locations") == "get_block_locations"]
got = sorted(r["blocks"] for r in glr)
assert got == blocks, f"{mode}: rows for blocks {got}, want one per {blocks}"
for r in glr:
    for k in ("calls", "mean_ms", "median_ms", "stddev_ms", "p99_ms", "throughput_per_sec", "floor_median_ms"):
        v = r[k]
        assert isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, f"{mode}/{r['blocks']}: bad {k}={v!r}"
    assert r["median_ms"] > 0, f"{mode}/{r['blocks']}: median 0"
    assert r.get("errors", 0) == 0, f"{mode}/{r['blocks']}: {r['errors']} errors"
print(f"JSON ok: {len(glr)} rows for mode {mode}, blocks {got}, medians (ms) "
      + ", ".join(f"{r['blocks']}:{r['median_ms']:.3f}" for r in sorted(glr, key=lambda r: r["blocks"])))
PY
	elif command -v jq >/dev/null 2>&1; then
		local want n
		want=$(tr ',' '\n' <<<"$blocks" | sort -n | paste -sd, -)
		n=$(jq -r --arg m "$2" '[.[] | select(.token_mode == $m and ((.op // "get_block_locations") == "get_block_locations") and (.errors // 0) == 0 and .median_ms > 0) | .blocks] | sort | map(tostring) | join(",")' "$1")
		[ "$n" = "$want" ] || {
			echo "mode $2: rows for blocks [$n], want [$want]" >&2
			return 1
		}
		echo "JSON ok: rows for mode $2, blocks $n"
	else
		echo "neither python3 nor jq: cannot check the JSON" >&2
		return 1
	fi
}

IFS=, read -r -a mode_list <<<"$modes"
[ "${#mode_list[@]}" -gt 0 ] || fail "SMOKE_TOKEN_MODES is empty"
export BLOCKFS_LOADGEN_CALLS=$calls BLOCKFS_LOADGEN_BLOCKS=$blocks
started=1
for mode in "${mode_list[@]}"; do
	export BLOCKFS_TOKEN_MODE=$mode
	say "token mode $mode: starting namenodes and datanodes (recreated if the mode changed)"
	"${compose[@]}" up -d "${namenodes[@]}" "${datanodes[@]}"
	wait_healthy 120 "${namenodes[@]}" "${datanodes[@]}"
	wait_cluster
	pass "cluster healthy in token mode $mode"
	say "token mode $mode: cluster healthy; running loadgen --blocks $blocks --calls $calls"
	rm -f "$BLOCKFS_OUT/loadgen.json"
	# A fresh loadgen container; `up` leaves the healthy cluster as it is and
	# starts loadgen through its depends_on health conditions.
	"${compose[@]}" rm -f -s loadgen >/dev/null 2>&1 || true
	"${compose[@]}" up -d loadgen
	id=$(cid loadgen)
	[ -n "$id" ] || fail "no loadgen container"
	rc=$(timeout 600 docker wait "$id") || fail "loadgen did not finish within 600s"
	"${compose[@]}" logs --no-color loadgen | sed -e 's/^[^|]*| \{0,1\}//'
	[ "$rc" = 0 ] || fail "loadgen exited $rc in mode $mode"
	[ -s "$BLOCKFS_OUT/loadgen.json" ] || fail "loadgen wrote no $BLOCKFS_OUT/loadgen.json"
	check_json "$BLOCKFS_OUT/loadgen.json" "$mode" || fail "loadgen JSON check failed in mode $mode"
	cp "$BLOCKFS_OUT/loadgen.json" "$tmp/loadgen-$mode.json"
	pass "loadgen sweep in token mode $mode"
done

say "dfs round trip of a 10 MiB file, as root"
[ -x "$bin/dfs" ] || fail "no dfs binary in deploy/bin (does cmd/dfs build?)"
head -c $((10 << 20)) /dev/urandom >"$tmp/in.bin"
# The compose service dfs (profile tools) runs dfs in the image with host
# networking and the directory $PWD at /work, as BLOCKFS_DFS_USER (root by
# default: the user-root certificate under mTLS); extra `run` flags go first.
dfs() {
	local opts=()
	while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	PWD=$tmp "${compose[@]}" run --rm -T --no-deps "${opts[@]}" dfs "$@"
}
dfs -- cluster || fail "dfs cluster"
dfs -- mkdir -p /smoke || fail "dfs mkdir -p /smoke"
# 1 MiB blocks: ten blocks, so the file spans pipelines to several datanodes.
dfs -- put -blocksize 1048576 /work/in.bin /smoke/in.bin || fail "dfs put"
dfs -- stat /smoke/in.bin || fail "dfs stat"
dfs -- locations /smoke/in.bin || fail "dfs locations"
dfs -- get /smoke/in.bin /work/out.bin || fail "dfs get"
cmp "$tmp/in.bin" "$tmp/out.bin" || fail "dfs get returned different bytes than were put"
pass "dfs round trip ($auth, user root): $(wc -c <"$tmp/out.bin") bytes identical (sha256 $(sha256sum "$tmp/out.bin" | cut -c1-16)...)"

# expect_refused NAME STDERR-FILE rc: the command failed, and for want of
# permission (not, say, for a dead namenode).
expect_refused() {
	[ "$3" != 0 ] || fail "$1: the call succeeded; it must be refused"
	grep -qi 'permission denied' "$2" || {
		cat "$2" >&2
		fail "$1: failed (exit $3), but not with 'permission denied'"
	}
	pass "$1: refused ($(grep -i -m1 'permission denied' "$2" | cut -c1-120))"
}
say "refusals"
rc=0
# BLOCKFS_DFS_USER picks the dfs service's certificate (and simple-auth name).
BLOCKFS_DFS_USER=alice dfs -- put /work/in.bin /smoke/alice.bin 2>"$tmp/err" || rc=$?
expect_refused "user alice writing into root's /smoke" "$tmp/err" "$rc"
if [ "$auth" = mtls ]; then
	rc=0
	dfs -e BLOCKFS_TLS_CERT=/certs/datanode-dn1.pem -e BLOCKFS_TLS_KEY=/certs/datanode-dn1-key.pem -- \
		ls / 2>"$tmp/err" || rc=$?
	expect_refused "datanode certificate dn1 used as a client (ls /)" "$tmp/err" "$rc"
fi
dfs -- rm /smoke/in.bin || fail "dfs rm"
say "all checks passed"
