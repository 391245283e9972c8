#!/usr/bin/env bash
# scripts/reproduce_all.sh --smoke: the LASP, FlexSP and ATOM reproductions run end to end at tiny sizes and each writes
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
script 0 "$repo/scripts/reproduce_all.sh" --smoke --out "$tmp/results"
moved=$(ls -d "$tmp/results"/lasp.* 2>/dev/null | head -n 1)
[[ -n $moved && $(cat "$moved/keep.txt") == "an earlier report" ]] || fail "the earlier results folder was not kept"

/usr/bin/python3 - "$tmp/results/lasp" <<'PY' || fail "the LASP results are malformed"
import sys
from pathlib import Path
import matplotlib.image
out = Path(sys.argv[1])
md = (out / "lasp.md").read_text()
for heading in ("## Measured here", "## At paper scale", "### Longest sequence on 64 GPUs",
                "### Scalability of LASP", "### LASP-2 over LASP-1"):
    assert heading in md, f"lasp.md lacks '{heading}'"
rows = [l for l in md.splitlines() if l.startswith("| ")]
for method in ("LASP-1", "LASP-2", "Ulysses", "Ring"):
    for what in ("longest", "tokens/s"):
        row = next((r for r in rows if r.startswith(f"| {method} | {what} |")), None)
        assert row, f"no '{method} {what}' row"
        cells = [c.strip() for c in row.strip("|").split("|")][2:4]  # 1 and 2 ranks
        assert all(c and float(c.split()[0].replace(",", "")) > 0 for c in cells), row
for gpus in (8, 16, 32, 64, 128):
    row = next((r for r in rows if r.startswith(f"| {gpus} | ")), None)
    assert row and "K" in row.split("|")[2], f"no scalability row for {gpus} GPUs: {row}"
for name in ("measured_max_length", "measured_throughput", "paper_max_length", "paper_throughput"):
    image = matplotlib.image.imread(out / f"{name}.png")
    assert image.shape[0] > 100 and image.shape[1] > 100, (name, image.shape)
print(f"lasp.md: {len(rows)} table rows; 4 figures")
PY
checks=$((checks + 1))

/usr/bin/python3 - "$tmp/results/flexsp" <<'PY' || fail "the FlexSP results are malformed"
import sys
from pathlib import Path
import matplotlib.image
out = Path(sys.argv[1])
md = (out / "flexsp.md").read_text()
for heading in ("## Measured here", "## At paper scale", "### Beside the paper"):
    assert heading in md, f"flexsp.md lacks '{heading}'"
rows = [[c.strip() for c in l.strip("|").split("|")] for l in md.splitlines() if l.startswith("| ")]
measured = [r for r in rows if r[0] == "wikipedia" and r[2] in ("flexsp", "batchada", "static")]
assert len(measured) == 3 and all(float(r[3].replace(",", "")) > 0 and r[5].endswith("%") for r in measured), measured
assert all(r[4].endswith("x**") for r in measured if r[2] != "flexsp"), measured
paper = [r for r in rows if r[0].startswith("GPT-")]
assert len(paper) == 18 and all(r[4].startswith("**") and r[5].endswith("x") for r in paper), paper
for name in ("measured_speedup", "paper_speedup"):
    image = matplotlib.image.imread(out / f"{name}.png")
    assert image.shape[0] > 100 and image.shape[1] > 100, (name, image.shape)
print(f"flexsp.md: {len(measured)} measured runs, {len(paper)} paper-scale settings; 2 figures")
PY
checks=$((checks + 1))

/usr/bin/python3 - "$tmp/results/atom" <<'PY' || fail "the ATOM results are malformed"
import sys
from pathlib import Path
import matplotlib.image
out = Path(sys.argv[1])
md = (out / "atom.md").read_text()
for heading in ("## Measured here: peers against the pipeline", "## Measured here: a peer swapping",
                "## At paper scale"):
    assert heading in md, f"atom.md lacks '{heading}'"
rows = [[c.strip() for c in l.strip("|").split("|")] for l in md.splitlines() if l.startswith("| ")]
links = [r for r in rows if r[0] == "1gbit" and r[1] in ("atom", "pipeline", "dp")]
assert len(links) == 3 and all(float(r[3].replace(",", "")) > 0 for r in links), links
assert all(r[4].endswith("x**") for r in links if r[1] != "atom"), links
swaps = [r for r in rows if r[0] in ("resident", "1/2")]
assert len(swaps) == 2 and swaps[1][1] != "1" and swaps[1][3].endswith("x**"), swaps
paper = [r for r in rows if r[0] in ("10gbit", "1gbit", "100mbit") and len(r) == 8]
assert len(paper) == 3 and all(r[5].endswith("x**") and int(r[3]) >= 1 for r in paper), paper
for name in ("measured_throughput", "paper_throughput"):
    image = matplotlib.image.imread(out / f"{name}.png")
    assert image.shape[0] > 100 and image.shape[1] > 100, (name, image.shape)
print(f"atom.md: {len(links)} measured runs, {len(swaps)} swap runs, {len(paper)} paper-scale links; 2 figures")
PY
checks=$((checks + 1))

script 2 "$repo/scripts/reproduce_all.sh" --fast
stderr_line "reproduce_all.sh: unknown argument '--fast'"
script 2 "$repo/scripts/reproduce_lasp.sh" --smoke --quick
grep -q "not allowed with argument" "$tmp/err" || fail "--smoke --quick is not refused"
script 2 "$repo/scripts/reproduce_flexsp.sh" --out
grep -q "expected one argument" "$tmp/err" || fail "--out without a folder is not refused"
TRIDENT="$tmp/none" script 1 "$repo/scripts/reproduce_lasp.sh" --smoke --out "$tmp/never"
stderr_line "reproduce: no trident binary at '$tmp/none'"
[[ ! -e $tmp/never ]] || fail "a failed start wrote a results folder"
echo "all $checks checks passed"
