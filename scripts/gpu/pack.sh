#!/usr/bin/env bash
# Builds the GPU kit: one folder that runs every CUDA check of Trident on a machine with a GPU and the CUDA 13 toolkit
# but none of Debian's libraries (the lent GPU machine). Its kit.tar.gz holds the trident binary and the gpu test
# binaries (CUDA for sm_90: H100, H200), every shared library they need beyond glibc, the CUDA toolkit and NCCL (Open
# MPI relocated with its plugins, so that a singleton and `mpirun -np 4` both work there), the configs, the
# quickstart corpus and the scripts; check.sh beside it unpacks it and runs the checks. Compressed, because Debian's
# OpenBLAS alone is 36 MB. Prints the folder's path as its last line.
#   bash scripts/gpu/pack.sh                      # configures and builds build-gpu (portable x86-64-v3, sm_90)
#   bash scripts/gpu/pack.sh --build-dir build    # packs an existing CUDA build instead (the tests do)
#   bash scripts/gpu/pack.sh --out DIR            # writes the kit to DIR (default .gpu)
# Then, on the GPU machine: bash .gpu/check.sh (docs/gpu.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
usage() { echo "usage: bash scripts/gpu/pack.sh [--build-dir DIR] [--out DIR]" >&2; exit 2; }
build="" out="$root/.gpu"
while (($#)); do
  case $1 in
    --build-dir) [[ $# -ge 2 ]] || usage; build=$2; shift 2 ;;
    --out) [[ $# -ge 2 ]] || usage; out=$2; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "pack.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
limit_mib=60
binaries=(trident test_kernels_cuda test_atom_cuda test_nccl test_lasp_cuda test_sp_cuda)

if [[ -z $build ]]; then
  build="$root/build-gpu"
  bash "$root/scripts/install-deps.sh"
  # Portable: the GPU machine's processor is not this one (x86-64-v3: AVX2 and FMA, any server of the last decade).
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRIDENT_CUDA=ON -DTRIDENT_PORTABLE=ON \
    -DCMAKE_CXX_FLAGS=-march=x86-64-v3 -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_TESTING=ON
  cmake --build "$build" -j"$(nproc)" --target "${binaries[@]}"
fi
[[ -d $build ]] || { echo "pack.sh: --build-dir '$build' is not a directory" >&2; exit 2; }
paths=()
for b in "${binaries[@]}"; do
  p=$(find "$build" -maxdepth 2 -type f -name "$b" -perm -u+x | head -n 1)
  [[ -n $p ]] ||
    { echo "pack.sh: $build has no '$b': a CUDA build is needed (-DTRIDENT_CUDA=ON, BUILD_TESTING)" >&2; exit 2; }
  paths+=("$p")
done
"${paths[0]}" --version | grep -q cuda || { echo "pack.sh: ${paths[0]} was built without CUDA" >&2; exit 2; }

# Written under a temporary name and renamed at the end: a kit is whole or absent.
partial="$out.partial"
rm -rf "$partial"
tmp="$partial/tree"  # what kit.tar.gz holds
mkdir -p "$tmp"/{bin,lib/fallback,configs,data,scripts,tests}
source "$root/scripts/gpu/openmpi_kit.sh"
copy_openmpi "$tmp"
for p in "${paths[@]}"; do cp "$p" "$tmp/bin/"; done
strip --strip-unneeded "$tmp"/bin/* 2>/dev/null || true

# The libraries every binary and MPI plugin needs, but those every GPU machine has: glibc, the CUDA driver and
# toolkit, NCCL (PyTorch's). libstdc++ and libgcc_s go to lib/fallback, used only where the machine's are older
# (kit_env.sh).
copy_needed_libraries() {
  local lib name dest
  ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
    name=$(basename "$lib")
    case $name in
      libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux* | libresolv.so.* | libutil.so.*)
        continue ;;
      libcuda.so.* | libcudart.so.* | libcublas.so.* | libcublasLt.so.* | libnccl.so.* | libnvidia*) continue ;;
      libstdc++.so.* | libgcc_s.so.*) dest=lib/fallback ;;
      *) dest=lib ;;
    esac
    [[ -e $tmp/$dest/$name ]] || cp -L "$lib" "$tmp/$dest/$name"
  done
}
copy_needed_libraries "$tmp"/bin/*
missing=$(ldd "$tmp"/bin/* 2>/dev/null | grep 'not found' | sort -u || true)
[[ -z $missing ]] || { echo "pack.sh: unresolved libraries here already: $missing" >&2; exit 1; }

cp "$root/scripts/gpu/check.sh" "$root/scripts/gpu/kit_env.sh" "$root/scripts/gpu/openmpi_kit.sh" "$tmp/"
cp "$root/scripts/bench/torch_step.py" "$tmp/scripts/"
cp "$root/tests/app/test_cuda_train.sh" "$root/tests/app/lib.sh" "$tmp/tests/"
cp "$root/tests/app/configs/tiny_train.yaml" "$root/configs/quickstart.yaml" "$root/configs/gpt2_124m.yaml" \
  "$tmp/configs/"
bash "$root/scripts/data/fortunes_corpus.sh" "$tmp/data/fortunes.txt"
{
  commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  git -C "$root" diff --quiet HEAD 2>/dev/null || commit+=" (with uncommitted changes)"
  echo "commit $commit"
  echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "$("$tmp/bin/trident" --version | head -n 1)"
} >"$tmp/KIT_INFO"
unpacked_mib=$(du -sm "$tmp" | cut -f1)
tar -C "$tmp" -czf "$partial/kit.tar.gz" .
cp "$tmp/KIT_INFO" "$root/scripts/gpu/check.sh" "$partial/"
rm -rf "$tmp"

size_mib=$(du -sm "$partial" | cut -f1)
if ((size_mib > limit_mib)); then
  echo "pack.sh: the kit is $size_mib MiB, over its $limit_mib MiB limit" >&2
  exit 1
fi
rm -rf "$out"
mv "$partial" "$out"
echo "pack.sh: kit of $size_mib MiB ($unpacked_mib MiB unpacked); on the GPU machine: bash $out/check.sh" >&2
echo "$out"
