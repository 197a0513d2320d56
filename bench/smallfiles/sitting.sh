#!/bin/sh
# sitting.sh measures blockfs and SeaweedFS on small files in one sitting,
# interleaved, as issue 25 compares them: ROUNDS times, each setup once in
# turn (every run on a fresh cluster), then the median of each setup's
# runs (with --procs also the 6 server processes' CPU ms a write: what a
# file costs the cluster, beside the rate). A setup is
# LABEL=COMMAND: a bench/smallfiles binary with its flags
# (run with --rounds 1 --json), or "seaweed" for bench/smallfiles/seaweed.sh
# (WEED, FILES, CLIENTS; SWFLAGS are put before it, e.g. "FSYNC=0 WARM=500").
# Every run takes /tmp/bench.lock for itself, so other benchmarks on the
# machine wait for it and it for them. No test runs it.
#
#   bench/smallfiles/sitting.sh WEED ROUNDS FILES CLIENTS 'old=/tmp/sf-old' \
#       'new=/tmp/sf-new --read-by writer --location-cache 1m' 'seaweed=seaweed'
#
# OUT (default a new temporary directory) keeps every run's output.
set -eu
weed=$1 rounds=$2 files=$3 clients=$4
shift 4
out=${OUT:-$(mktemp -d /tmp/sitting.XXXXXX)}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
: >"$out/runs.tsv"
echo "sitting: $rounds rounds, $files files, $clients clients; output in $out; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
r=1
while [ "$r" -le "$rounds" ]; do
	for setup in "$@"; do
		label=${setup%%=*} cmd=${setup#*=}
		log="$out/$label-$r.log"
		load=$(cut -d' ' -f1 /proc/loadavg)
		if [ "$cmd" = seaweed ] || [ "${cmd%% seaweed}" != "$cmd" ]; then
			env ${cmd%seaweed} flock /tmp/bench.lock sh "$here/seaweed.sh" "$weed" "$files" "$clients" >"$log" 2>&1 || true
			python3 - "$log" "$label" "$r" "$load" >>"$out/runs.tsv" <<'PY'
import re, sys
log, label, r, load = sys.argv[1:]
text = open(log).read()
def rate(section):
    m = re.search(section + r".*?Requests per second:\s+([0-9.]+)", text, re.S)
    return float(m.group(1)) if m else float("nan")
print(f"{label}\t{r}\t{load}\t{rate('Writing Benchmark'):.0f}\t{rate('Reading Benchmark'):.0f}")
PY
		else
			# shellcheck disable=SC2086
			flock /tmp/bench.lock $cmd --files "$files" --clients "$clients" --rounds 1 --json "$out/$label-$r.json" >"$log" 2>&1 || true
			python3 - "$out/$label-$r.json" "$label" "$r" "$load" >>"$out/runs.tsv" <<'PY'
import json, sys
path, label, r, load = sys.argv[1:]
try:
    m = json.load(open(path))["median"]
    w, rd = m["write"]["files_per_sec"], m["read"]["files_per_sec"]
    cw, cr = m["write"].get("cluster_cpu_ms_per_file", float("nan")), m["read"].get("cluster_cpu_ms_per_file", float("nan"))
    print(f"{label}\t{r}\t{load}\t{w:.0f}\t{rd:.0f}\t{m['write']['cpu_ms_per_file']:.2f}\t{m['read']['cpu_ms_per_file']:.2f}\t{cw:.2f}\t{cr:.2f}")
except Exception as e:
    print(f"{label}\t{r}\t{load}\tnan\tnan\t# {e}")
PY
		fi
		tail -n 1 "$out/runs.tsv"
	done
	r=$((r + 1))
done
echo "sitting ended $(date -u +%FT%TZ); medians (writes/s, reads/s):"
python3 - "$out/runs.tsv" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    cw = float(f[7]) if len(f) > 7 else float("nan")
    rows.setdefault(f[0], []).append((float(f[3]), float(f[4]), cw))
for label, v in rows.items():
    w = statistics.median(x[0] for x in v)
    r = statistics.median(x[1] for x in v)
    cw = statistics.median(x[2] for x in v)
    cpu = "" if cw != cw else f"\tcluster CPU ms a write {cw:.2f}"
    print(f"{label}\t{w:.0f}\t{r:.0f}{cpu}\truns: " + ", ".join(f"{a:.0f}/{b:.0f}" for a, b, _ in v))
PY
