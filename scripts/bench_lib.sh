# Sourced by the bench scripts (which define die): the trident binary to run and a fresh report folder.
#   trident=$(bench_trident)          TRIDENT, else build/trident; must be executable
#   out=$(bench_out runs/bench_NAME)  created empty; an earlier report there is moved aside, never deleted

bench_trident() {
  local binary
  binary=$(realpath -m "${TRIDENT:-build/trident}")
  [[ -x $binary ]] || die "no trident binary at '$binary' (build it, or set TRIDENT)"
  echo "$binary"
}

bench_out() {
  local out=$1
  if [[ -e $out ]]; then mv "$out" "$out.$(date +%Y%m%d-%H%M%S)"; fi
  mkdir -p "$out"
  realpath "$out"
}
