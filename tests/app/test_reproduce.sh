#!/usr/bin/env bash
# scripts/reproduce/all.sh --smoke: the LASP, FlexSP and ATOM reproductions run end to end at tiny sizes and each writes
# its results folder: the markdown report with each of its tables filled for every method, rank count and GPU count, and
# PNG figures matplotlib can read back. Their values are not checked (they are measurements); their shape is. An
# existing results folder is moved aside, never overwritten; bad arguments are one-line errors with exit 2.
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
echo "all $checks checks passed"
