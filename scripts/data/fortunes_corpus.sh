#!/usr/bin/env bash
# Writes the quickstart's corpus to OUT (default runs/data/fortunes.txt) unless it is already there: every fortune
# text file of Debian's `fortunes` package (not their .dat indexes), in a fixed order, under a temporary name first.
# Usage: bash scripts/data/fortunes_corpus.sh [OUT]
set -euo pipefail
corpus=${1:-runs/data/fortunes.txt}
[[ -s $corpus ]] && exit 0
files=$(find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.*' | sort)
if [[ -z $files ]]; then
  echo "data/fortunes_corpus.sh: no fortune texts under /usr/share/games/fortunes" \
    "(install the fortunes package: scripts/install-deps.sh)" >&2
  exit 1
fi
mkdir -p "$(dirname "$corpus")"
xargs cat <<<"$files" >"$corpus.tmp"
mv "$corpus.tmp" "$corpus"
