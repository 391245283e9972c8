#!/usr/bin/env bash
# Installs every Debian package Trident needs to build, test and run. Idempotent: packages already
# present are left alone and `apt-get update` runs only when something is missing.
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config git
  # libraries
  openmpi-bin libopenmpi-dev libpmix-dev libyaml-cpp-dev libspdlog-dev libfmt-dev catch2 libcli11-dev
  nlohmann-json3-dev libopenblas-dev libopenblas-openmp-dev zlib1g-dev coinor-libcbc-dev libglpk-dev
  # independent reference implementation for the parity tests
  python3 python3-torch python3-numpy python3-matplotlib python3-pip
  # a single-node Slurm for the launcher test (scripts/slurm/local_cluster.sh); libpmix-dev above is what
  # Slurm's PMIx plugin loads
  slurmctld slurmd slurm-client munge
  # the English text the quickstart model trains on
  fortunes
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages already installed"
else
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -o DPkg::Lock::Timeout=600 -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
  echo "install-deps: installed ${#missing[@]} package(s): ${missing[*]}"
fi

# The `safetensors` Python package (not packaged by Debian), for the test that Trident's weight files open with
# the standard loader: installed from PyPI into the repository's .deps/python, never into the system.
pydeps="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/python"
if PYTHONPATH="$pydeps" /usr/bin/python3 -c "import safetensors" 2>/dev/null; then
  echo "install-deps: safetensors (Python) already in $pydeps"
else
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --target "$pydeps" "safetensors==0.8.0"
  echo "install-deps: installed safetensors 0.8.0 (Python) into $pydeps"
fi
