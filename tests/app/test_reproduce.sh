#!/usr/bin/env bash
# scripts/reproduce/all.sh --smoke: the LASP, FlexSP and ATOM reproductions run end to end at tiny sizes and each writes
# its results folder: the markdown report with each of its tables filled for every method, rank count and GPU count, and
# PNG figures matplotlib can read back. Their values are not checked (they are measurements); their shape is. An
# existing results folder is moved aside, never overwritten, and an interrupted reproduction (SIGTERM) leaves it in
# place with its emulated cluster down; bad arguments are one-line errors with exit 2.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_reproduce.sh
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export TRIDENT="$trident"

# script CODE ARGS...: bash ARGS (a script of the repository) with its exit code checked; output to $tmp/out, err.
script() {
  local expected=$1
  shift
  checks=$((checks + 1))
  echo "check $checks: bash $* -> exit $expected"
  bash "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  [[ $code == "$expected" ]] || fail "exit code $code, expected $expected"
}

mkdir -p "$tmp/results/lasp"
echo "an earlier report" >"$tmp/results/lasp/keep.txt"
script 0 "$repo/scripts/reproduce/all.sh" --smoke --out "$tmp/results"
moved=$(ls -d "$tmp/results"/lasp.* 2>/dev/null | head -n 1)
[[ -n $moved && $(cat "$moved/keep.txt") == "an earlier report" ]] || fail "the earlier results folder was not kept"

for paper in lasp flexsp atom; do
  checks=$((checks + 1))
  /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/check_reproduce.py" $paper "$tmp/results/$paper" ||
    fail "the $paper results are malformed"
done

script 2 "$repo/scripts/reproduce/all.sh" --fast
stderr_line "reproduce/all.sh: unknown argument '--fast'"
script 2 "$repo/scripts/reproduce/lasp.sh" --smoke --quick
grep -q "not allowed with argument" "$tmp/err" || fail "--smoke --quick is not refused"
script 2 "$repo/scripts/reproduce/flexsp.sh" --out
grep -q "expected one argument" "$tmp/err" || fail "--out without a folder is not refused"
TRIDENT="$tmp/none" script 1 "$repo/scripts/reproduce/lasp.sh" --smoke --out "$tmp/never"
stderr_line "reproduce: no trident binary at '$tmp/none'"
[[ ! -e $tmp/never ]] || fail "a failed start wrote a results folder"
# Interrupted, as a time limit does: SIGTERM to ATOM's driver once its emulated cluster is up (or, where namespaces
# cannot be made, once it runs) ends it with 143, takes the cluster down, and leaves the earlier report in place; the
# run's own files stay in atom.partial.
mkdir -p "$tmp/stopped/atom"
echo "an earlier report" >"$tmp/stopped/atom/keep.txt"
checks=$((checks + 1))
echo "check $checks: SIGTERM to reproduce/atom.sh while its cluster is up -> exit 143, cluster down, report kept"
bash "$repo/scripts/reproduce/atom.sh" --smoke --out "$tmp/stopped/atom" >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do
  ip netns list 2>/dev/null | grep -q "^reproduce-atom-$pid-" && break
  ! ip netns list >/dev/null 2>&1 && [[ -d $tmp/stopped/atom.partial/runs ]] && break
  sleep 0.2
done
kill -TERM "$pid"
wait "$pid"
code=$?
[[ $code == 143 ]] || fail "exit code $code after SIGTERM, expected 143"
ip netns list 2>/dev/null | grep -q "^reproduce-atom-$pid-" && fail "the emulated cluster is still up after SIGTERM"
[[ $(cat "$tmp/stopped/atom/keep.txt") == "an earlier report" && -d $tmp/stopped/atom.partial ]] ||
  fail "the interrupted run replaced the earlier report, or kept no files of its own"
grep -q "stopped by SIGTERM" "$tmp/err" || fail "no message on stopping"
# all.sh passes the signal on to the paper it is reproducing and stops with it.
checks=$((checks + 1))
echo "check $checks: SIGTERM to reproduce/all.sh -> exit 143, nothing of it left running"
bash "$repo/scripts/reproduce/all.sh" --smoke --out "$tmp/stopped_all" >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 300); do [[ -d $tmp/stopped_all/lasp.partial/runs ]] && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
code=$?
[[ $code == 143 ]] || fail "all.sh: exit code $code after SIGTERM, expected 143"
sleep 1
pgrep -f "$tmp/stopped_all" >/dev/null && fail "a process of the interrupted all.sh still runs"
[[ ! -e $tmp/stopped_all/lasp ]] || fail "an interrupted reproduction published a report"
echo "all $checks checks passed"
