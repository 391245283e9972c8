#!/usr/bin/env bash
# The GPU kit (scripts/gpu/pack.sh) works on a machine without Debian's libraries: packed from this CUDA build, copied
# into a bare Debian root (debootstrap --variant=minbase: glibc and libstdc++, no Open MPI, yaml-cpp, spdlog, fmt,
# CBC, GLPK, OpenBLAS, OpenMP) lent this machine's CUDA toolkit (as the GPU machine has one) and run there with
# chroot, every library of every kit binary resolves from the kit, the toolkit or glibc, `trident --version` lists
# cuda, the CPU stages of check.sh pass (1-rank training, and 2 ranks started by the kit's own mpirun), and the GPU
# stages report "no device" with exit 0. A singleton MPI run (no mpirun) works too.
# Skipped (77) where a root cannot be made: not root, or no debootstrap.
# The root is kept in $KIT_ROOT (default .deps/kit-root) and made once (about 80 s, from Debian's mirror).
# Usage: BUILD_DIR=build bash tests/app/test_gpu_kit.sh
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:?set BUILD_DIR to a CUDA build directory}
root=${KIT_ROOT:-$repo/.deps/kit-root}
tmp=$(mktemp -d)
mounted=()
cleanup() {
  local m
  for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null; done
  rm -rf "$tmp" "$root/kit" "$root/out" "$root/tmp/tree"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

(($(id -u) == 0)) || { echo "skipped: making and entering a root with chroot needs root"; exit 77; }
command -v debootstrap >/dev/null ||
  { echo "skipped: debootstrap is not installed (scripts/install-deps.sh)"; exit 77; }

# ---- the kit, from this build ---------------------------------------------------------------------------------
bash "$repo/scripts/gpu/pack.sh" --build-dir "$build" --out "$tmp/kit" >"$tmp/pack.log" 2>&1 ||
  { cat "$tmp/pack.log"; fail "pack.sh failed"; }
[[ $(tail -n 1 "$tmp/pack.log") == "$tmp/kit" ]] || fail "pack.sh's last line is not the kit's path"
[[ ! -e $tmp/kit.partial ]] || fail "pack.sh left its partial folder behind"
size=$(du -sm "$tmp/kit" | cut -f1)
((size <= 60)) || fail "the kit is $size MiB, over 60"
echo "check: pack.sh wrote a kit of $size MiB"
bash "$repo/scripts/gpu/pack.sh" --bogus >"$tmp/out" 2>&1
[[ $? == 2 ]] && grep -q "unknown argument '--bogus'" "$tmp/out" || fail "pack.sh --bogus: expected exit 2 naming it"
bash "$repo/scripts/gpu/pack.sh" --build-dir "$tmp/nowhere" --out "$tmp/kit2" >"$tmp/out" 2>&1
[[ $? == 2 ]] && grep -q "is not a directory" "$tmp/out" && [[ ! -e $tmp/kit2 ]] ||
  fail "pack.sh --build-dir of a missing folder: expected exit 2 and no kit"
echo "check: pack.sh's bad arguments are exit 2 with the reason"

# ---- a bare Debian root, made once ------------------------------------------------------------------------------
if [[ ! -x $root/bin/bash ]]; then
  rm -rf "$root.partial"
  mirror=http://deb.debian.org/debian
  debootstrap --variant=minbase bookworm "$root.partial" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
    { tail -n 20 "$tmp/debootstrap.log"; fail "debootstrap of a bookworm minbase root failed"; }
  mv "$root.partial" "$root"
fi
for lib in libmpi.so.40 libyaml-cpp.so.0.7 libspdlog.so.1.10 libfmt.so.9 libCbc.so.3 libglpk.so.40 libopenblas.so.0 \
           libgomp.so.1 libhwloc.so.15 libpmix.so.2; do
  [[ -z $(find "$root/usr/lib" "$root/lib" -name "$lib" 2>/dev/null) ]] || fail "the bare root has $lib already"
done
echo "check: the bare root lacks Open MPI, yaml-cpp, spdlog, fmt, CBC, GLPK, OpenBLAS, OpenMP, hwloc and PMIx"

# ---- the kit inside it ------------------------------------------------------------------------------------------
cp -a "$tmp/kit" "$root/kit"
mkdir -p "$root/out" "$root/dev/shm" "$root/proc" "$root/sys" "$root/tmp"
mount -t proc proc "$root/proc" && mounted+=("$root/proc") || fail "cannot mount /proc in the root"
# hwloc reads the processor topology from /sys (without it, Open MPI warns at every start)
mount -t sysfs sys "$root/sys" && mounted+=("$root/sys") || fail "cannot mount /sys in the root"
# The CUDA toolkit, as the GPU machine has it (runtime, cuBLAS, NCCL), read-only; no driver, so no device.
cuda=$(readlink -f /usr/local/cuda)
[[ -e $cuda/lib64/libcudart.so.13 ]] || fail "no CUDA 13 toolkit at /usr/local/cuda to lend the root"
mkdir -p "$root/usr/local/cuda"
mount --bind -o ro "$cuda" "$root/usr/local/cuda" && mounted=("$root/usr/local/cuda" "${mounted[@]}") ||
  fail "cannot bind the CUDA toolkit into the root"
mount --bind /dev "$root/dev" && mounted+=("$root/dev") || fail "cannot bind /dev in the root"
mount -t tmpfs tmpfs "$root/dev/shm" && mounted=("$root/dev/shm" "${mounted[@]}") || fail "cannot mount /dev/shm"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root "$@"; }
# The kit's tree, unpacked in the root as check.sh does, for the checks before check.sh itself.
in_root /bin/bash -c 'rm -rf /tmp/tree && mkdir /tmp/tree && tar -xzf /kit/kit.tar.gz -C /tmp/tree' ||
  fail "cannot unpack kit.tar.gz in the root"
in_kit() { in_root /bin/bash -c "source /tmp/tree/kit_env.sh && cd /tmp && $1"; }

in_kit 'ldd /tmp/tree/bin/trident' >"$tmp/ldd" 2>&1 || fail "ldd in the root failed"
grep -q 'not found' "$tmp/ldd" && { cat "$tmp/ldd"; fail "a library of trident is missing in the root"; }
for lib in libmpi libyaml-cpp libspdlog libfmt libCbc libglpk libopenblas libgomp; do
  grep -q "$lib.* => /tmp/tree/lib/" "$tmp/ldd" || { cat "$tmp/ldd"; fail "$lib does not resolve from the kit"; }
done
echo "check: trident's libraries resolve from the kit's lib/ (and glibc) in the root"
in_kit 'trident --version' >"$tmp/version" 2>&1 || { cat "$tmp/version"; fail "trident --version failed in the root"; }
grep -q cuda "$tmp/version" || fail "trident --version does not list cuda: $(cat "$tmp/version")"
echo "check: trident --version in the root: $(head -n 1 "$tmp/version")"
# A singleton: MPI starts inside the process, without mpirun.
in_kit 'trident train /tmp/tree/configs/tiny_train.yaml --set train.steps=5 --set run.dir=/tmp/singleton' \
  >"$tmp/singleton" 2>&1 || { tail -n 20 "$tmp/singleton"; fail "a singleton trident train failed in the root"; }
echo "check: a singleton run (MPI without mpirun) trains in the root"

OUT_IN_ROOT=/out
in_root /bin/bash -c "OUT=$OUT_IN_ROOT CHECK_BUDGET=300 bash /kit/check.sh" >"$tmp/check" 2>&1
rc=$?
cat "$tmp/check"
((rc == 0)) || fail "check.sh exited $rc in the root (no GPU: expected 0)"
report="$root/out/report.md"
[[ -s $report && -s $root/out/logs.tar.gz ]] || fail "check.sh wrote no report.md and logs.tar.gz"
for stage in libraries version cpu_train mpi_train; do
  grep -q "^| $stage | cpu | pass |" "$report" || fail "CPU stage $stage did not pass"
done
for stage in device gpu_kernels bench_step_bf16 torch_eager quickstart cuda_train sanitizer; do
  grep -q "^| $stage | gpu | no device |" "$report" || fail "GPU stage $stage does not report 'no device'"
done
grep -q "^- device: no device" "$report" || fail "the report does not say there is no device"
tar -tzf "$root/out/logs.tar.gz" | grep -q 'logs/mpi_train.log' || fail "logs.tar.gz lacks the stage logs"
echo "check: check.sh in the root: CPU stages pass, GPU stages 'no device', exit 0"
echo "all checks passed"
