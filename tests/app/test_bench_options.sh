#!/usr/bin/env bash
# The bench scripts' options (scripts/bench/lib.sh's bench_options): each kind accepts what it should and refuses the
# rest with one line and exit 2; every bench script answers --help and refuses an unknown option before any work.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "test_bench_options: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/probe.sh" <<PROBE
#!/usr/bin/env bash
# A probe of bench_options.
# Usage: probe.sh [--steps N] ...
set -euo pipefail
die() { echo "probe.sh: \$*" >&2; exit 2; }
source "$root/scripts/bench/lib.sh"
steps=3 inter_bw=1gbit attention=softmax presets=a,b memory_gb=0.5 quick=0 sets=() like=
bench_options steps:count inter-bw:rate attention:one-of-softmax,linear presets:words memory-gb:number quick:flag \\
  set:sets like:file -- "\$@"
echo "\$steps \$inter_bw \$attention \$presets \$memory_gb \$quick \${sets[*]}\${like:+ like=\$like}"
PROBE
probe() { bash "$tmp/probe.sh" "$@"; }
refused() {  # MESSAGE ARGS...: exit 2 and MESSAGE on stderr
  local message=$1 rc=0
  shift
  probe "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == 2 ]] || fail "'$*' exited $rc, expected 2"
  grep -qF -- "$message" "$tmp/err" || fail "'$*': no '$message' in: $(cat "$tmp/err")"
}
[[ $(probe) == "3 1gbit softmax a,b 0.5 0 " ]] || fail "defaults: $(probe)"
got=$(probe --steps 12 --inter-bw 100mbit --attention linear --presets x,y --memory-gb .02 --quick --set a.b=1 \
  --set c=d)
[[ $got == "12 100mbit linear x,y .02 1 --set a.b=1 --set c=d" ]] || fail "values: $got"
refused "--steps: '0' is not a positive whole number" --steps 0
refused "--steps: '1.5' is not a positive whole number" --steps 1.5
refused "--steps needs a value" --steps
refused "--inter-bw: '1g' is not a rate like 100mbit or 1gbit" --inter-bw 1g
refused "--attention: 'lin' is not one of softmax,linear" --attention lin
refused "--memory-gb: '0.0' is not a positive number" --memory-gb 0.0
refused "--memory-gb: 'x' is not a positive number" --memory-gb x
refused "--like: '$tmp/none.yaml' is not a file" --like "$tmp/none.yaml"
[[ $(probe --like "$root/configs/clusters/a100-8x8-gpt7b.yaml") == *" like=$root/configs/clusters/a100-8x8-gpt7b.yaml" ]] ||
  fail "--like FILE was not kept"
refused "--set needs key=value, not 'ab'" --set ab
refused "unknown argument '--stpes' (allowed: --steps, --inter-bw, --attention, --presets, --memory-gb, --quick, \
--set, --like)" --stpes 3
refused "unknown argument 'extra'" extra
[[ $(probe --help) == $'A probe of bench_options.\nUsage: probe.sh [--steps N] ...' ]] || fail "--help: $(probe --help)"

# --help finds its script wherever it is run from (the scripts cd to the repository first).
(cd "$root/scripts/bench" && bash dp.sh --help | grep -q "Data-parallel strong scaling") ||
  fail "--help from scripts/bench/"
(cd "$root/tests" && bash ../scripts/bench/cpu.sh --help | grep -q "PyTorch") || fail "--help from tests/"

# Every bench script: --help prints its header, an unknown option is refused before any work.
for script in "$root"/scripts/bench/*.sh; do
  name=$(basename "$script")
  [[ $name == lib.sh ]] && continue
  bash "$script" --help >"$tmp/help" 2>&1 || fail "$name --help exited $?"
  [[ $(wc -l <"$tmp/help") -ge 2 ]] || fail "$name --help printed: $(cat "$tmp/help")"
  rc=0
  bash "$script" --no-such-option >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == 2 ]] || fail "$name --no-such-option exited $rc, expected 2"
  grep -qF "bench/$name: unknown argument '--no-such-option' (allowed: --" "$tmp/err" || fail "$name: $(cat "$tmp/err")"
done
# Combinations a script refuses before any work.
refused_script() {  # SCRIPT MESSAGE ARGS...: exit 2 and MESSAGE on stderr
  local script=$1 message=$2 rc=0
  shift 2
  bash "$root/scripts/bench/$script" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == 2 ]] || fail "$script $*: exited $rc, expected 2"
  grep -qF -- "$message" "$tmp/err" || fail "$script $*: no '$message' in: $(cat "$tmp/err")"
}
refused_script flexsp.sh "--calibrate belongs with --like TESTBED" --calibrate
refused_script flexsp.sh "--calibrate needs --attention softmax" --calibrate --attention linear \
  --like "$root/configs/clusters/a100-8x8-gpt7b.yaml"
# scripts/cluster/calibrate.py against a hand computation: a share of 0.25 here (the median after the first step) and
# 0.5 on the testbed scale a slowdown of 4 by odds(0.5) / odds(0.25) = 3; a run of one step has nothing to measure.
mkdir -p "$tmp/calibrate/run"
echo '{"slowdown": 4}' >"$tmp/calibrate/like.json"
printf '{"alltoall_ms": %s, "step_ms": 100}\n' 90 20 25 30 >"$tmp/calibrate/run/metrics.jsonl"
printf '{"static_sp": {"exchange_s": %s, "time_s": %s}}\n' 1 2 3 6 >"$tmp/calibrate/plan.jsonl"
calibrate=("$root/scripts/cluster/calibrate.py" "$tmp/calibrate/like.json" --plans "$tmp/calibrate/plan.jsonl" --runs)
got=$(/usr/bin/python3 "${calibrate[@]}" "$tmp/calibrate/run")
[[ $got == "12 4 0.2500 0.5000" ]] || fail "calibrate.py: $got, expected '12 4 0.2500 0.5000'"
head -n 1 "$tmp/calibrate/run/metrics.jsonl" >"$tmp/calibrate/one.jsonl" && mv "$tmp/calibrate/one.jsonl" \
  "$tmp/calibrate/run/metrics.jsonl"
rc=0
/usr/bin/python3 "${calibrate[@]}" "$tmp/calibrate/run" >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc == 1 ]] && grep -qF "calibrate.py: no step after the first to measure" "$tmp/err" ||
  fail "calibrate.py on a one-step run: exit $rc, $(cat "$tmp/err")"
# bench_stamp: the report's first line says the command as given, the commit, the CPU and cores, the UTC date.
cat >"$tmp/stamp.sh" <<STAMP
#!/usr/bin/env bash
set -euo pipefail
source "$root/scripts/bench/lib.sh"
echo "| a table |" >"\$1"
bench_stamp "\$1"
STAMP
bash "$tmp/stamp.sh" "$tmp/report.md" "a b"
first=$(head -n 1 "$tmp/report.md")
[[ $first =~ ^Measured\ by\ \`bash\ .*/stamp.sh\ .*report.md\ a\\\ b\`:\ commit\ [0-9a-f]+.*,\ [0-9]+\ core\(s\),\ 20[0-9-]+\ [0-9:]+\ UTC\.$ ]] ||
  fail "bench_stamp wrote: $first"
[[ $(sed -n 3p "$tmp/report.md") == "| a table |" ]] || fail "bench_stamp lost the report: $(cat "$tmp/report.md")"
echo "test_bench_options: passed"
