"""Where and when a measurement is made: the commit (with "+ uncommitted changes" where the tracked tree differs from
it), the CPU model and cores, the UTC date. The reproduction drivers (reproduce/common.py) put it in their reports'
headers; the bench scripts (bench/lib.sh: bench_provenance, bench_stamp) at the top of theirs.

  python3 scripts/provenance.py    one line: "commit C, CPU, N core(s), YYYY-MM-DD HH:MM UTC"
"""
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def provenance() -> dict:
    def git(*argv):
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    rev = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        rev += " + uncommitted changes"
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return {"commit": rev, "machine": f"{cpu}, {os.cpu_count()} core(s)",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


if __name__ == "__main__":
    p = provenance()
    print(f"commit {p['commit']}, {p['machine']}, {p['date']}")
