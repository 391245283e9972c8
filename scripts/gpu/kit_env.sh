#!/usr/bin/env bash
# Sourced from the kit folder (check.sh does): the environment the kit's binaries run in on a machine without
# Debian's libraries. The kit's own libraries first, then the CUDA toolkit's runtime and cuBLAS, then NCCL (the
# toolkit's, or PyTorch's nvidia-nccl wheel); Open MPI relocated into the kit (openmpi_env, scripts/gpu/openmpi_kit.sh);
# libstdc++ from the kit only where the machine's is older than the one the binaries were built against.
kit_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -x $kit_dir/bin/trident ]] || { echo "kit_env.sh: $kit_dir has no bin/trident" >&2; return 1; }

kit_library_path="$kit_dir/lib"
cuda_lib=""
for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  if [[ -e $dir/libcudart.so.13 && -e $dir/libcublas.so.13 ]]; then
    cuda_lib=$dir
    kit_library_path+=":$cuda_lib"
    break
  fi
done
# No toolkit there: the runtime and cuBLAS of PyTorch's nvidia-* wheels, where they are CUDA 13's.
if [[ -z $cuda_lib ]]; then
  for module in nvidia.cuda_runtime nvidia.cublas; do
    dir=$(python3 -c "import $module, os; print(os.path.join(list($module.__path__)[0], 'lib'))" 2>/dev/null || true)
    [[ -n $dir && -d $dir ]] && kit_library_path+=":$dir"
  done
fi
[[ -d ${CUDA_HOME:-/usr/local/cuda}/bin ]] && export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"  # compute-sanitizer
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 ' && [[ -z $cuda_lib || ! -e $cuda_lib/libnccl.so.2 ]]; then
  nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' \
             2>/dev/null || true)
  [[ -n $nccl_lib && -e $nccl_lib/libnccl.so.2 ]] && kit_library_path+=":$nccl_lib"
fi
export LD_LIBRARY_PATH="$kit_library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The machine's libstdc++ unless the binaries ask for symbols it lacks (then the kit's, from the build machine).
if LD_LIBRARY_PATH="$kit_library_path" ldd "$kit_dir/bin/trident" 2>&1 |
   grep -q "GLIBCXX.*not found\|libstdc++.*not found"; then
  export LD_LIBRARY_PATH="$kit_dir/lib/fallback:$LD_LIBRARY_PATH"
fi

# shellcheck source=scripts/gpu/openmpi_kit.sh
source "$kit_dir/openmpi_kit.sh"
openmpi_env "$kit_dir"
export PATH="$kit_dir/bin:$PATH"
# As the tests run MPI here: root allowed, more ranks than cores, no CMA (containers' seccomp blocks it).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
  OMPI_MCA_rmaps_base_oversubscribe=1
