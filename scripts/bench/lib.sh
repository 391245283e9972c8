#!/usr/bin/env bash
# Sourced by the bench scripts (which define die): their options, the trident binary to run and a fresh report
# folder.
#   trident=$(bench_trident)          TRIDENT, else build/trident; must be executable
#   out=$(bench_out runs/bench_NAME)  created empty; an earlier report there is moved aside, never deleted
#   bench_stamp [FILE]                the report's first line: the command, commit, machine and date (read when the
#                                     script sourced this file) put at the top of FILE, or printed when none
#   bench_cluster NODES RANKS CONFIG  the emulated cluster: --inter-bw's one level, or --like's two levels
#   bench_like_report FILE            the --like scaling's table appended to the report

# The script's command line and where and when it runs, read as it starts (scripts/provenance.py).
bench_script=$0  # as invoked: relative to where it was run from, before the script's cd
[[ $bench_script == /* || -f $bench_script ]] || bench_script=$OLDPWD/$bench_script
bench_command="bash $(realpath -m --relative-to="$(dirname "${BASH_SOURCE[0]}")/../.." "$bench_script")"
if (($#)); then bench_command+=$(printf ' %q' "$@"); fi
bench_measured=$(/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/../provenance.py")

bench_stamp() {
  local line="Measured by \`$bench_command\`: $bench_measured."
  if (($# == 0)); then
    printf '%s\n\n' "$line"
    return
  fi
  { printf '%s\n\n' "$line"; cat "$1"; } >"$1.stamped" && mv "$1.stamped" "$1"
}

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

# bench_is_rate RATE: whether RATE is a link rate the emulated cluster takes (100mbit, 1gbit, 2.5gbit).
bench_is_rate() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?(kbit|mbit|gbit)$ ]]; }

# bench_options OPTION... -- "$@": the script's arguments. OPTION is NAME:KIND; `--NAME VALUE` sets the variable NAME
# (dashes as underscores; the script sets its default first) once VALUE is of its KIND:
#   count   a positive whole number            number  a positive decimal number
#   rate    a link rate such as 100mbit, 1gbit  words   any non-empty text (a list the script checks itself)
#   file    an existing file
#   one-of-A,B,C  one of those words            sets    key=value, appended as `--NAME key=value` to the array sets
#   flag    takes no value: sets NAME=1
# -h/--help prints the script's header comment; anything else is an error naming the options, through die (exit 2).
bench_options() {
  local -A kinds=()
  local allowed="" name kind var
  while [[ $1 != -- ]]; do
    kinds[${1%%:*}]=${1#*:} allowed+="${allowed:+, }--${1%%:*}"
    shift
  done
  shift
  while [[ $# -gt 0 ]]; do
    if [[ $1 == -h || $1 == --help ]]; then
      local script=$0  # as invoked: relative to where it was run from, before the script's cd
      [[ $script == /* || -f $script ]] || script=$OLDPWD/$script
      sed -n '2,/^set -euo pipefail/{/^#/s/^# \{0,1\}//p}' "$script"
      exit 0
    fi
    name=${1#--}
    [[ $1 == --* && -n ${kinds[$name]+x} ]] || die "unknown argument '$1' (allowed: $allowed)"
    kind=${kinds[$name]} var=${name//-/_}
    if [[ $kind == flag ]]; then
      printf -v "$var" 1
      shift
      continue
    fi
    [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value"
    case $kind in
      count) [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1: '$2' is not a positive whole number" ;;
      number) [[ $2 =~ ^[0-9]*\.?[0-9]+$ && ! $2 =~ ^[0.]+$ ]] || die "$1: '$2' is not a positive number" ;;
      rate) bench_is_rate "$2" || die "$1: '$2' is not a rate like 100mbit or 1gbit" ;;
      words) ;;
      file) [[ -f $2 ]] || die "$1: '$2' is not a file" ;;
      one-of-*) [[ ",${kind#one-of-}," == *",$2,"* ]] || die "$1: '$2' is not one of ${kind#one-of-}" ;;
      sets) [[ $2 == ?*=* ]] || die "$1 needs key=value, not '$2'" ;;
      *) die "bench_options: option $name has an unknown kind '$kind'" ;;
    esac
    if [[ $kind == sets ]]; then
      sets+=("$1" "$2")
    else
      printf -v "$var" '%s' "$2"
    fi
    shift 2
  done
}

# bench_cluster NODES RANKS CONFIG [--set key=value]...: brings up the script's emulated cluster (the EXIT trap takes
# it down) and sets `emu` and `cl` for `"${emu[@]}" run "${cl[@]}" -- PROGRAM`, and `bench_links` to its conditions
# in words. With `like` set (the script's --like TESTBED): two levels at the testbed's ratios for CONFIG's model (the
# sets override CONFIG's keys for its profile, measured once: $out/like_profile.yaml), both sides' table in
# $out/like.md and its figures in $out/like.json. Otherwise one level, `inter_bw` between nodes and shared memory
# inside them.
bench_cluster() {
  local nodes=$1 ranks=$2 config=$3 script
  shift 3
  script=$(basename "$0" .sh)
  emu=(bash scripts/cluster/emucluster.sh)
  cl=(--name "bench-${script//_/-}-$$")
  trap '"${emu[@]}" down "${cl[@]}" >/dev/null 2>&1' EXIT
  if [[ -z ${like:-} ]]; then
    "${emu[@]}" up "${cl[@]}" --nodes "$nodes" --ranks-per-node "$ranks" --inter-bw "$inter_bw" >/dev/null
    bench_links="$inter_bw between nodes, shared memory inside them"
    return
  fi
  local dir=/tmp/${cl[1]} rates
  local measured=()  # a cluster after the first shares the first one's profile
  [[ ! -f $out/like_profile.yaml ]] || measured=(--profile "$out/like_profile.yaml")
  TRIDENT=$trident "${emu[@]}" up "${cl[@]}" --dir "$dir" --nodes "$nodes" --ranks-per-node "$ranks" \
    --like "$like" --config "$config" ${measured[@]+"${measured[@]}"} "$@" >/dev/null ||
    die "the emulated cluster at $like's ratios did not come up"
  cp "$dir/profile.yaml" "$out/like_profile.yaml"
  sed "s|$dir/profile.yaml|$out/like_profile.yaml|" "$dir/like.md" >"$out/like.md"
  sed "s|$dir/profile.yaml|$out/like_profile.yaml|" "$dir/like.json" >"$out/like.json"
  rates=$(sed -n 's/^emucluster: --intra-bw \([^ ]*\) --inter-bw \([^ ]*\) .*/rank links \1, node links \2/p' \
    "$out/like.md")
  bench_links="two levels at the ratios of $(basename "$like" .yaml): $rates"
}

# bench_like_report FILE: appends the testbed scaling's table ($out/like.md, `trident like`) to the report, when
# there is one.
bench_like_report() {
  [[ -f $out/like.md ]] || return 0
  cat "$out/like.md" >>"$1"
}
