#!/usr/bin/env bash
# The papers' experiments reproduced, each into OUT/<paper>/ (a markdown table and PNG plots;
# docs/benchmarks/reproduction.md).
# scripts/reproduce/lasp.sh, flexsp.sh and atom.sh in turn, each measured here and at paper scale.
#   bash scripts/reproduce/all.sh [--smoke | --quick | --full] [--out DIR]
# --smoke: tiny sizes, checks that every table and plot is produced (what CI runs, ~4 minutes); --quick (default): the
# figures of docs/benchmarks/reproduction.md (~90 minutes on 2 cores, most of it ATOM's slowest link); --full: larger
# runs. DIR defaults to results/; each paper's results are built in DIR/<paper>.partial and take DIR/<paper>'s place
# (an existing one moved aside, never deleted) once complete, so an interrupted run (SIGTERM, SIGINT) leaves the last
# report where it was, and its emulated cluster down. Builds nothing: TRIDENT names the binary (default build/trident).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "reproduce/all.sh: $*" >&2; exit 2; }
mode=--quick out=results
while (($#)); do
  case $1 in
    --smoke|--quick|--full) mode=$1; shift ;;
    --out) (($# >= 2)) || die "--out needs a directory"; out=$2; shift 2 ;;
    -h|--help) sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (allowed: --smoke, --quick, --full, --out DIR)" ;;
  esac
done
start=$SECONDS
# A stop signal (a time limit's SIGTERM, Ctrl-C) goes on to the paper being reproduced, which takes its emulated
# cluster down and leaves the last complete report in place; all.sh then stops with it (128 + the signal).
child=""
stop() {
  [[ -n $child ]] && kill -"$1" "$child" 2>/dev/null && wait "$child"
  exit $((128 + $2))
}
trap 'stop TERM 15' TERM
trap 'stop INT 2' INT
for paper in lasp flexsp atom; do
  echo "reproduce/all.sh: $paper ($mode) -> $out/$paper" >&2
  bash "scripts/reproduce/$paper.sh" "$mode" --out "$out/$paper" &
  child=$!
  wait "$child" || exit $?
  child=""
done
echo "reproduce/all.sh: done in $((SECONDS - start)) s: $out/" >&2
