#!/usr/bin/env bash
# Debian's Open MPI 4.1 (and its PMIx 4) made relocatable, for the GPU kit (scripts/gpu/pack.sh): copy_openmpi copies
# the runtime into a folder, openmpi_env points Open MPI, PMIx and hwloc at it. Checked in a bare Debian root
# (tests/app/test_gpu_kit.sh): a singleton and `mpirun -np 4` both run there.
# Layout: KIT/bin/{orterun,orted,ompi_info,mpirun,mpiexec}; KIT/lib (libmpi, libopen-rte/pal, libpmix, hwloc,
# libevent, ...); KIT/lib/openmpi3 (MCA plugins); KIT/lib/pmix (PMIx plugins); KIT/share/{openmpi,pmix} (help
# texts); KIT/etc (Debian's MCA parameters).
# Limit: Debian's libevent_core asks for glibc 2.36 (arc4random), so the kit runs where glibc is 2.36 or newer.

# copy_openmpi KIT: the runtime, every plugin but those of fabrics a single node does not use (UCX, libfabric, verbs,
# PSM, netlink; their libraries would add about 7.5 MB) and OpenSHMEM's, and every library they need but glibc's and
# libstdc++/libgcc_s.
copy_openmpi() (
  set -eo pipefail
  local kit=${1:?usage: copy_openmpi KIT}
  local arch=/usr/lib/x86_64-linux-gnu
  local plugins=$arch/openmpi/lib/openmpi3 pmix=$arch/pmix2
  local drop='ucx|ofi|openib|_psm|reachable_netlink|^mca_(atomic|memheap|scoll|spml|sshmem)_|^mca_pml_cm'
  drop+='|^libompi_dbg_msgq'
  local system='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so'
  system+='|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so)'
  mkdir -p "$kit"/{bin,lib/openmpi3,lib/pmix,share/openmpi,share/pmix,etc}
  cp -L /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info "$kit/bin/"
  ln -sf orterun "$kit/bin/mpirun"
  ln -sf orterun "$kit/bin/mpiexec"
  local l f
  for l in libmpi.so.40 libmpi_cxx.so.40 libopen-rte.so.40 libopen-pal.so.40 libmca_common_sm.so.40 \
           libmca_common_ompio.so.41 libmca_common_monitoring.so.50; do
    cp -L "$arch/$l" "$kit/lib/$l"
  done
  cp -L "$pmix/lib/libpmix.so.2" "$kit/lib/"
  for f in "$plugins"/*.so; do
    grep -Eq "$drop" <<<"$(basename "$f")" || cp -L "$f" "$kit/lib/openmpi3/"
  done
  cp -L "$pmix"/lib/pmix/*.so "$kit/lib/pmix/"
  cp -L /usr/share/openmpi/help-*.txt "$kit/share/openmpi/"
  cp -L "$pmix"/share/pmix/help-*.txt "$kit/share/pmix/"
  cp -L /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$kit/etc/"
  # Debian's PMIx parameters name its plugin folder by absolute path; PMIX_MCA_mca_base_component_path replaces it.
  grep -v '^[[:space:]]*mca_base_component_path' "$pmix/share/pmix-mca-params.conf" >"$kit/etc/pmix-mca-params.conf"
  # The closure: every library an ELF file of the kit needs, until nothing new is copied.
  local changed=1 name path
  while ((changed)); do
    changed=0
    while read -r name path; do
      [[ -e $kit/lib/$name ]] && continue
      grep -Eq "$system" <<<"$name" && continue
      [[ -e $path ]] || { echo "copy_openmpi: cannot resolve $name" >&2; return 1; }
      cp -L "$path" "$kit/lib/$name"
      changed=1
    done < <(find "$kit/bin" "$kit/lib" -type f -print0 |
             xargs -0 env LD_LIBRARY_PATH="$kit/lib:$pmix/lib:$arch/openmpi/lib" ldd 2>/dev/null |
             awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $2 == "=>" && $3 == "not" {print $1, "missing"}' | sort -u)
  done
  chmod -R u+w,a+rX "$kit"
)

# openmpi_env KIT: what orterun, orted and an MPI program need to run from KIT. Debian's Open MPI keeps its plugins
# and configuration outside its prefix (/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3, /etc/openmpi), so
# OPAL_PREFIX alone is not enough: each folder is named.
openmpi_env() {
  local kit
  kit=$(cd "${1:?usage: openmpi_env KIT}" && pwd)
  export OPAL_PREFIX="$kit" OPAL_EXEC_PREFIX="$kit" OPAL_BINDIR="$kit/bin" OPAL_LIBDIR="$kit/lib"
  export OPAL_PKGLIBDIR="$kit/lib/openmpi3" OPAL_DATAROOTDIR="$kit/share" OPAL_DATADIR="$kit/share"
  export OPAL_PKGDATADIR="$kit/share/openmpi" OPAL_SYSCONFDIR="$kit/etc"
  export PMIX_PREFIX="$kit" PMIX_EXEC_PREFIX="$kit" PMIX_BINDIR="$kit/bin" PMIX_LIBDIR="$kit/lib"
  export PMIX_PKGLIBDIR="$kit/lib/pmix" PMIX_DATAROOTDIR="$kit/share" PMIX_DATADIR="$kit/share"
  export PMIX_PKGDATADIR="$kit/share/pmix" PMIX_SYSCONFDIR="$kit/etc"
  export PMIX_MCA_mca_base_component_path="$kit/lib/pmix" OMPI_MCA_mca_base_component_path="$kit/lib/openmpi3"
  # An empty plugin folder: hwloc would otherwise load the machine's own hwloc plugins, of another version.
  mkdir -p "$kit/lib/hwloc"
  export HWLOC_PLUGINS_PATH="$kit/lib/hwloc"
  # One node and no ssh there: mpirun, and the orted a singleton starts, launch locally.
  export OMPI_MCA_plm=isolated
  export PATH="$kit/bin${PATH:+:$PATH}"
  export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
