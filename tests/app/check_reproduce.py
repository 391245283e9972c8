"""Checks the shape of one reproduction's results folder (tests/app/test_reproduce.sh): the report's sections, a
filled row for every method and scale, whole rows of runs for the settings its mode chose, and figures matplotlib
reads back. Not the values.

    python3 check_reproduce.py lasp|flexsp|atom RESULTS_DIR
"""
import re
import sys
from pathlib import Path

import matplotlib.image


def report(out: Path, paper: str, headings: list[str]) -> list[list[str]]:
    """The report's table rows as lists of cells, after checking it has every heading."""
    md = (out / f"{paper}.md").read_text()
    provenance = md.splitlines()[2]  # the command, then where and when it ran
    assert re.search(r"\): commit [0-9a-f]{7,}.*, .+, \d+ core\(s\), started \d{4}-\d\d-\d\d \d\d:\d\d UTC, ",
                     provenance), f"{paper}.md does not say its commit, machine and date: {provenance}"
    for heading in headings:
        assert heading in md, f"{paper}.md lacks '{heading}'"
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if line.startswith("| ")]


def figures(out: Path, names: list[str]) -> None:
    for name in names:
        image = matplotlib.image.imread(out / f"{name}.png")
        assert image.shape[0] > 100 and image.shape[1] > 100, (name, image.shape)


def number(cell: str) -> float:
    return float(cell.split()[0].strip("*x").replace(",", ""))


def lasp(out: Path) -> str:
    rows = report(out, "lasp", ["## Measured here", "## Hybrids (LASP-2H)", "## At paper scale",
                                "### Longest sequence on 64 GPUs", "### Scalability of LASP", "### LASP-2 over LASP-1"])
    for model in ("pure linear", "1/8 hybrid", "1/4 hybrid", "1/2 hybrid", "pure softmax"):
        row = next((r for r in rows if r[0] == model and len(r) == 7), None)  # the recall task
        assert row and all(number(c) > 0 for c in row[2:5]), (model, row)
    for model, strategy in (("pure linear", "lasp2"), ("1/8 hybrid", "lasp2+ulysses"), ("1/4 hybrid", "lasp2+ulysses"),
                            ("1/2 hybrid", "lasp2+ulysses"), ("pure softmax", "ulysses")):
        row = next((r for r in rows if r[0] == model and len(r) == 6), None)  # tokens/s, bytes, longest
        searched = model in ("pure linear", "1/4 hybrid", "pure softmax")
        assert row and row[1] == strategy and all(number(c) > 0 for c in row[2:5 + searched]), (model, row)
    for method in ("LASP-1", "LASP-2", "Ulysses", "Ring"):
        for what in ("longest", "tokens/s"):
            row = next((r for r in rows if r[:2] == [method, what]), None)
            assert row and all(number(c) > 0 for c in row[2:4]), (method, what, row)  # 1 and 2 ranks
    for gpus in ("8", "16", "32", "64", "128"):
        row = next((r for r in rows if r[0] == gpus), None)
        assert row and row[1].endswith("K"), f"no scalability row for {gpus} GPUs: {row}"
    figures(out, ["measured_max_length", "measured_throughput", "paper_max_length", "paper_throughput"])
    return f"{len(rows)} table rows, 4 figures"


def flexsp(out: Path) -> str:
    rows = report(out, "flexsp", ["## Measured here", "## At paper scale", "### Beside the paper", "### The links for"])
    measured = [r for r in rows if len(r) == 7 and r[2] in ("flexsp", "batchada", "static")]
    assert len(measured) >= 3 and len(measured) % 3 == 0, measured
    assert all(number(r[3]) > 0 and r[5].endswith("%") for r in measured), measured
    assert all(r[4].endswith("x**") for r in measured if r[2] != "flexsp"), measured
    paper = [r for r in rows if r[0].startswith("GPT-")]
    assert len(paper) == 18 and all(number(r[4]) > 0 and r[5].endswith("x") for r in paper), paper
    figures(out, ["measured_speedup", "paper_speedup"])
    return f"{len(measured)} measured runs, {len(paper)} paper-scale settings, 2 figures"


def atom(out: Path) -> str:
    rows = report(out, "atom", ["## Measured here: peers against the pipeline", "## Measured here: a peer swapping",
                                "## At paper scale", "### The link for the testbed's"])
    links = [r for r in rows if len(r) == 7 and r[2] in ("pipeline", "atom", "atom_hidden")]
    assert len(links) >= 3 and len(links) % 3 == 0 and all(number(r[4]) > 0 for r in links), links
    assert all(r[1].endswith("Mbit/s") for r in links), links
    assert all(r[5].endswith("x**") and int(r[3]) >= 1 for r in links if r[2] != "pipeline"), links
    swaps = [r for r in rows if r[0] in ("resident", "1/2")]
    assert len(swaps) == 2 and swaps[1][1] != "1" and swaps[1][3].endswith("x**"), swaps
    paper = [r for r in rows if r[0] in ("10gbit", "1gbit", "100mbit") and len(r) == 8]
    assert len(paper) == 3 and all(r[5].endswith("x**") and int(r[3]) >= 1 for r in paper), paper
    figures(out, ["measured_throughput", "paper_throughput"])
    return f"{len(links)} measured runs, {len(swaps)} swap runs, {len(paper)} paper-scale links, 2 figures"


if __name__ == "__main__":
    paper, folder = sys.argv[1], Path(sys.argv[2])
    print(f"{paper}: {globals()[paper](folder)}")
