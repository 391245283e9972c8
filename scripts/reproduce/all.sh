#!/usr/bin/env bash
# The papers' experiments reproduced, each into OUT/<paper>/ (a markdown table and PNG plots;
# docs/benchmarks/reproduction.md).
# scripts/reproduce/lasp.sh, flexsp.sh and atom.sh in turn, each measured here and at paper scale.
#   bash scripts/reproduce/all.sh [--smoke | --quick | --full] [--out DIR]
# --smoke: tiny sizes, checks that every table and plot is produced (what CI runs, ~4 minutes); --quick (default): the
# figures of docs/benchmarks/reproduction.md (~90 minutes on 2 cores, most of it ATOM's slowest link); --full: larger
# runs. DIR defaults to results/; an existing DIR/<paper> is moved aside, never deleted. Builds nothing: TRIDENT
# names the binary (default build/trident).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "reproduce/all.sh: $*" >&2; exit 2; }
mode=--quick out=results
while (($#)); do
  case $1 in
    --smoke|--quick|--full) mode=$1; shift ;;
    --out) (($# >= 2)) || die "--out needs a directory"; out=$2; shift 2 ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (allowed: --smoke, --quick, --full, --out DIR)" ;;
  esac
done
start=$SECONDS
for paper in lasp flexsp atom; do
  echo "reproduce/all.sh: $paper ($mode) -> $out/$paper" >&2
  bash "scripts/reproduce/$paper.sh" "$mode" --out "$out/$paper"
done
echo "reproduce/all.sh: done in $((SECONDS - start)) s: $out/" >&2
