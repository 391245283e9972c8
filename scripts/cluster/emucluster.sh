#!/usr/bin/env bash
# An emulated multi-node cluster on this machine, built from the kernel's own pieces: one network namespace per
# node (with its own hostname), a veth link from each node to a bridge, and a `tc tbf` rate limit on both ends of
# every link. Ranks on one node talk over shared memory; ranks on different nodes cross two rate-limited links
# (the sender's and the receiver's), so a pair gets the slower of the two rates.
# With --intra-bw the cluster has two levels, as NVLink inside a node and InfiniBand between nodes: every rank runs in
# a network namespace of its own with its own link (at the intra-node rate) to its node's bridge, the node's link (at
# the inter-node rate) joins that bridge to the others, and ranks talk over TCP only, so traffic inside a node crosses
# the intra-node links and traffic between nodes crosses both kinds. Latency is not emulated: the kernels here have
# no `netem`. Needs root, `ip` (iproute2), `tc` and `unshare` (util-linux).
#
#   scripts/cluster/emucluster.sh up     [--dir DIR] [--name NAME] --nodes N --ranks-per-node R --inter-bw RATE
#                                        [--intra-bw RATE] [--node-bw nodeI=RATE]...
#   scripts/cluster/emucluster.sh up     [--dir DIR] [--name NAME] --nodes N --ranks-per-node R --like TESTBED
#                                        --config CONFIG [--set key=value]... [--exchange sequence|pipeline]
#                                        [--profile FILE] [--alltoall-group G] [--scale-lengths] [--slowdown S]
#                                        # two levels at a testbed's ratios
#   scripts/cluster/emucluster.sh status [--dir DIR] [--name NAME]  # layout, links and processes; exit 1 when down
#   scripts/cluster/emucluster.sh run    [--dir DIR] [--name NAME] [--np N] [--map-by slot|node] -- PROGRAM [ARGS...]
#   scripts/cluster/emucluster.sh down   [--dir DIR] [--name NAME]  # safe to repeat, also after a failed up or a
#                                                                     killed job
#
# RATE is tc's notation in bits per second: 100mbit, 1gbit, 2.5gbit, 500kbit. `run` starts N ranks (default
# nodes x ranks-per-node) through mpirun, which runs in the namespace NAME-head that owns the bridge; its launch
# agent starts each node's ranks inside NAME-nodeI. --map-by slot (default) fills node0 with ranks 0..R-1, then
# node1; --map-by node deals ranks round robin (rank 0 on node0, rank 1 on node1, ...).
# --like TESTBED (a cluster file of configs/clusters/) profiles CONFIG's model here (trident bench profile, one thread
# a rank) and builds two levels whose rates `trident like` computes: moving a token's activations takes the same
# share of computing it as on the testbed, inside and between nodes. Its report is DIR/like.md (DIR/like.json: the
# same figures as `trident like --json` prints them, for scripts). --exchange pipeline
# scales a pipeline's stage boundaries instead of sequence parallelism's all-to-alls (ATOM's baseline: one stage a
# rank here, a device on the testbed). --profile FILE takes CONFIG's profile from FILE (an earlier DIR/profile.yaml)
# instead of measuring it, so clusters brought up one after another share one measurement. --alltoall-group G scales
# the node links from the testbed's all-to-all over G devices (its network.alltoall row) instead of its inter_node
# link: an all-to-all over every rank here, across every node, then stands for one over G devices there.
# --scale-lengths matches the ratios at every sequence length, for a benchmark whose lengths are the testbed's times
# DIR/like.json's length_scale (`trident like --scale-lengths`). --slowdown S says each rank computes S times slower
# than the one-thread profile (default ranks / cores, at least 1): a benchmark that measured how much slower its ranks
# compute in training, where moving bytes costs these cores too, brings the cluster up again with that.
# The caller's environment reaches every rank (OMPI_MCA_* included: OMPI_MCA_btl=self,tcp forces TCP inside nodes).
# In a two-level cluster each rank is a host of its own to mpirun (nodeI-rK, one slot), whose launch agent runs it in
# the namespace NAME-nodeI-rK; the rank itself sees the hostname nodeI, which is how Trident groups ranks into nodes.
#
# Everything lives in the namespaces NAME-head, NAME-node0.. and NAME-node0-r0.. (addresses 10.99.0.0/16 exist only
# there; the machine's own network, hostname and /etc/hosts are untouched) and in DIR (config, hostfiles, hosts,
# agent, rank wrapper).
# NAME defaults to trident-emu, DIR to /tmp/NAME. `up` of the layout that is already up does nothing and exits 0;
# `up` of a different layout while one is up is an error (run `down` first).
set -Eeuo pipefail  # -E: the ERR trap of `up` also fires inside the functions it calls

prog=emucluster
usage() {
  cat >&2 <<EOF
usage: $0 up     [--dir DIR] [--name NAME] --nodes N --ranks-per-node R --inter-bw RATE [--intra-bw RATE]
                     [--node-bw nodeI=RATE]...
       $0 up     [--dir DIR] [--name NAME] --nodes N --ranks-per-node R --like TESTBED --config CONFIG
                     [--set key=value]... [--exchange sequence|pipeline] [--profile FILE] [--alltoall-group G]
                     [--scale-lengths] [--slowdown S]
       $0 status [--dir DIR] [--name NAME]
       $0 run    [--dir DIR] [--name NAME] [--np N] [--map-by slot|node] -- PROGRAM [ARGS...]
       $0 down   [--dir DIR] [--name NAME]
EOF
  exit 2
}
bad() { echo "$prog: $*" >&2; exit 2; }   # usage errors
die() { echo "$prog: $*" >&2; exit 1; }   # runtime failures

[[ $# -ge 1 ]] || usage
action=$1
shift
case $action in up | down | status | run) ;; -h | --help) usage ;; *) bad "unknown command '$action' (up, down, status, run)" ;; esac

name=trident-emu dir= nodes= ranks= inter_bw= intra_bw= like= like_config= exchange= given_profile= np= map_by=slot
alltoall_group= scale_lengths= slowdown=
node_bw=()
profile_sets=()
program=()
need() { [[ $# -ge 2 && -n $2 ]] || bad "$1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) need "$@"; dir=$2; shift 2 ;;
    --name) need "$@"; name=$2; shift 2 ;;
    --nodes) [[ $action == up ]] || bad "--nodes belongs to 'up'"; need "$@"; nodes=$2; shift 2 ;;
    --ranks-per-node) [[ $action == up ]] || bad "--ranks-per-node belongs to 'up'"; need "$@"; ranks=$2; shift 2 ;;
    --inter-bw) [[ $action == up ]] || bad "--inter-bw belongs to 'up'"; need "$@"; inter_bw=$2; shift 2 ;;
    --intra-bw) [[ $action == up ]] || bad "--intra-bw belongs to 'up'"; need "$@"; intra_bw=$2; shift 2 ;;
    --like) [[ $action == up ]] || bad "--like belongs to 'up'"; need "$@"; like=$2; shift 2 ;;
    --config) [[ $action == up ]] || bad "--config belongs to 'up'"; need "$@"; like_config=$2; shift 2 ;;
    --exchange) [[ $action == up ]] || bad "--exchange belongs to 'up'"; need "$@"; exchange=$2; shift 2 ;;
    --profile) [[ $action == up ]] || bad "--profile belongs to 'up'"; need "$@"; given_profile=$2; shift 2 ;;
    --alltoall-group) [[ $action == up ]] || bad "--alltoall-group belongs to 'up'"; need "$@"; alltoall_group=$2
      shift 2 ;;
    --scale-lengths) [[ $action == up ]] || bad "--scale-lengths belongs to 'up'"; scale_lengths=1; shift ;;
    --slowdown) [[ $action == up ]] || bad "--slowdown belongs to 'up'"; need "$@"; slowdown=$2; shift 2 ;;
    --set) [[ $action == up ]] || bad "--set belongs to 'up'"; need "$@"; profile_sets+=(--set "$2"); shift 2 ;;
    --node-bw) [[ $action == up ]] || bad "--node-bw belongs to 'up'"; need "$@"; node_bw+=("$2"); shift 2 ;;
    --np) [[ $action == run ]] || bad "--np belongs to 'run'"; need "$@"; np=$2; shift 2 ;;
    --map-by) [[ $action == run ]] || bad "--map-by belongs to 'run'"; need "$@"; map_by=$2; shift 2 ;;
    --) [[ $action == run ]] || bad "'--' belongs to 'run'"; shift; program=("$@"); break ;;
    *) bad "unknown argument '$1'" ;;
  esac
done
# The name prefixes namespace names (and nothing in the machine's own namespace).
[[ $name =~ ^[a-z][a-z0-9-]{0,23}$ ]] || bad "--name: '$name' is not 1-24 characters of a-z, 0-9 and '-' starting with a letter"
dir=$(realpath -m "${dir:-/tmp/$name}")  # absolute: mpirun runs the agent, and the agent mounts DIR/hosts, elsewhere
[[ $dir != *[[:space:]\'\"\\]* ]] || bad "--dir: '$dir' has a space, quote or backslash (the launch agent embeds it)"
config=$dir/config
subnet=10.99

# bits_per_s RATE: RATE in bits per second (tc's bit units only), or nothing when RATE is not a positive one.
bits_per_s() {
  [[ $1 =~ ^([0-9]+|[0-9]*\.[0-9]+)(|k|m|g|t)bit$ ]] || return 0
  local scale
  case ${BASH_REMATCH[2]} in "") scale=1 ;; k) scale=1e3 ;; m) scale=1e6 ;; g) scale=1e9 ;; t) scale=1e12 ;; esac
  awk -v v="${BASH_REMATCH[1]}" -v s="$scale" 'BEGIN { if (v * s >= 1) printf "%.0f", v * s }'
}

# namespaces: this cluster's namespaces that exist now (ranks, then nodes, then head: each before its bridge).
namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$name-node[0-9]+-r[0-9]+$" || true
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$name-node[0-9]+$" || true
  ip netns list 2>/dev/null | awk '{print $1}' | grep -Fx "$name-head" || true
}

# pids_in NS...: processes running in the namespaces.
pids_in() { local ns; for ns in "$@"; do ip netns pids "$ns" 2>/dev/null || true; done; }

down() {
  [[ -f $config ]] && name=$(sed -n 's/^name=//p' "$config")
  local nss pids sig
  nss=$(namespaces)
  # Stop what still runs in the nodes (ranks and orteds of a killed job): TERM, then KILL after 3 s. A namespace
  # with processes in it outlives `ip netns del`.
  for sig in TERM KILL; do
    pids=$(pids_in $nss)
    [[ -z $pids ]] && break
    kill -"$sig" $pids 2>/dev/null || true
    for _ in $(seq 1 30); do [[ -z $(pids_in $nss) ]] && break; sleep 0.1; done
  done
  [[ -z $(pids_in $nss) ]] || die "processes $(pids_in $nss | tr '\n' ' ')survive KILL in $name's namespaces"
  # Deleting a namespace deletes the veth ends and the bridge inside it.
  local ns
  for ns in $nss; do ip netns del "$ns"; done
  rm -f "$config" "$dir/hostfile" "$dir/hostfile.by-node" "$dir/hosts" "$dir/agent" "$dir/rank" "$dir/like.md" \
    "$dir/like.json" "$dir/profile.yaml"
  rmdir "$dir" 2>/dev/null || true
  if [[ -n $nss ]]; then echo "$prog: $name is down"; else echo "$prog: $name was not up"; fi
}

# read_config: the layout of the cluster that is up (or half up) into shell variables.
read_config() {
  [[ -f $config ]] || die "no emulated cluster in $dir (run '$0 up' first, with the same --dir)"
  local key value
  while IFS='=' read -r key value; do
    case $key in
      name) name=$value ;; nodes) nodes=$value ;; ranks_per_node) ranks=$value ;; state) state=$value ;;
      intra) intra_bw=$value ;; like) like=$value ;;
      rates) read -r -a rates <<<"$value" ;;
    esac
  done <"$config"
}

# scale_to_testbed: sets intra_bw and inter_bw from --like TESTBED and --config CONFIG: this machine's profile of
# CONFIG's model, measured with one thread a rank (as the ranks run), and `trident like` (parallel/cost/testbed_scale.h).
# The report goes to $like_report, its JSON to $like_report.json.
scale_to_testbed() {
  [[ -n $like_config ]] || bad "--like needs --config CONFIG (the benchmark's model, profiled on this machine)"
  [[ -z $inter_bw && -z $intra_bw && ${#node_bw[@]} == 0 ]] ||
    bad "--like sets the rates itself: leave out --inter-bw, --intra-bw and --node-bw"
  [[ -f $like ]] || bad "--like: '$like' is not a file (a testbed's cluster file, e.g. configs/clusters/a100-8x8-gpt7b.yaml)"
  [[ -f $like_config ]] || bad "--config: '$like_config' is not a file"
  local trident=${TRIDENT:-$(dirname "$0")/../../build/trident}
  [[ -x $trident ]] || die "no trident binary at $trident (build it, or set TRIDENT)"
  like_profile=$(mktemp --suffix=.yaml) like_report=$(mktemp)
  rm -f "$like_profile"  # bench profile writes a new file
  if [[ -n $given_profile ]]; then
    cp "$given_profile" "$like_profile"
  else
    echo "$prog: profiling $like_config's model with one thread (trident bench profile)" >&2
    OMP_NUM_THREADS=1 "$trident" bench profile "$like_config" ${profile_sets[@]+"${profile_sets[@]}"} \
      --out "$like_profile" >/dev/null ||
      die "trident bench profile $like_config failed"
  fi
  # Ranks beyond the cores share them: each computes that much slower than the one-thread profile (unless --slowdown
  # says how much slower they were measured to compute).
  local cores
  cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # GNU nproc honours both
  [[ -n $slowdown ]] ||
    slowdown=$(awk -v r=$((nodes * ranks)) -v c="$cores" 'BEGIN { s = r / c; printf "%.6g", (s > 1 ? s : 1) }')
  local scale=("$trident" like "$like" "$like_profile" --slowdown "$slowdown" --ranks-per-node "$ranks")
  [[ $exchange != pipeline ]] || scale+=(--exchange pipeline --stages $((nodes * ranks)))
  [[ -z $alltoall_group ]] || scale+=(--alltoall-group "$alltoall_group")
  [[ -z $scale_lengths ]] || scale+=(--scale-lengths)
  "${scale[@]}" >"$like_report" && "${scale[@]}" --json >"$like_report.json" || die "trident like $like failed"
  read -r intra_bw inter_bw < <(sed -n 's/^emucluster: --intra-bw \([^ ]*\) --inter-bw \([^ ]*\).*/\1 \2/p' "$like_report")
  [[ -n $intra_bw && -n $inter_bw ]] || die "trident like printed no rates: $(cat "$like_report")"
}

up() {
  [[ -n $nodes ]] || bad "up needs --nodes N"
  [[ -n $ranks ]] || bad "up needs --ranks-per-node R"
  [[ $nodes =~ ^[1-9][0-9]*$ && $nodes -le 200 ]] || bad "--nodes: '$nodes' is not a whole number from 1 to 200"
  [[ $ranks =~ ^[1-9][0-9]*$ ]] || bad "--ranks-per-node: '$ranks' is not a positive whole number"
  [[ -z $like_config || -n $like ]] || bad "--config belongs with --like TESTBED"
  [[ ${#profile_sets[@]} == 0 || -n $like ]] || bad "--set belongs with --like TESTBED (it overrides CONFIG's keys)"
  [[ -z $exchange || -n $like ]] || bad "--exchange belongs with --like TESTBED"
  [[ -z $given_profile || -n $like ]] || bad "--profile belongs with --like TESTBED"
  [[ -z $given_profile || -f $given_profile ]] || bad "--profile: '$given_profile' is not a file"
  [[ -z $alltoall_group || -n $like ]] || bad "--alltoall-group belongs with --like TESTBED"
  [[ -z $alltoall_group || $alltoall_group =~ ^[1-9][0-9]*$ && $alltoall_group -ge 2 ]] ||
    bad "--alltoall-group: '$alltoall_group' is not a whole number of devices of at least 2"
  [[ -z $alltoall_group || $exchange != pipeline ]] ||
    bad "--alltoall-group belongs with --exchange sequence (a pipeline's boundaries are not all-to-alls)"
  [[ -z $scale_lengths || -n $like ]] || bad "--scale-lengths belongs with --like TESTBED"
  [[ -z $slowdown || -n $like ]] || bad "--slowdown belongs with --like TESTBED"
  if [[ -n $slowdown ]]; then
    [[ $slowdown =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] && awk -v s="$slowdown" 'BEGIN { exit !(s > 0) }' ||
      bad "--slowdown: '$slowdown' is not a positive number"
  fi
  [[ -z $scale_lengths || $exchange != pipeline ]] ||
    bad "--scale-lengths belongs with --exchange sequence (a pipeline's boundary moves a token whatever its length)"
  [[ -z $exchange || $exchange == sequence || $exchange == pipeline ]] ||
    bad "--exchange: '$exchange' is not sequence or pipeline"
  [[ $exchange != pipeline || $((nodes * ranks)) -ge 2 ]] || bad "--exchange pipeline needs at least 2 ranks (stages)"
  exchange=${exchange:-sequence}
  [[ -n $inter_bw || -n $like ]] || bad "up needs --inter-bw RATE (e.g. 1gbit) or --like TESTBED"
  [[ $(id -u) == 0 ]] || die "must run as root (it creates network namespaces)"
  local like_profile= like_report=
  if [[ -n $like ]]; then
    # Already up at this testbed's scale: nothing to measure.
    if [[ -f $config ]] && grep -qFx "like=$like" "$config" && grep -qFx "exchange=$exchange" "$config" &&
      grep -qFx "alltoall_group=$alltoall_group" "$config" && grep -qFx "scale_lengths=$scale_lengths" "$config" &&
      grep -qFx "slowdown=$slowdown" "$config" &&
      grep -qFx "state=up" "$config" &&
      grep -qFx "nodes=$nodes" "$config" && grep -qFx "ranks_per_node=$ranks" "$config" && [[ -n $(namespaces) ]]; then
      echo "$prog: $name is already up (nodes=$nodes ranks_per_node=$ranks like=$like)"
      return
    fi
    scale_to_testbed
  fi
  [[ -n $(bits_per_s "$inter_bw") ]] || bad "--inter-bw: '$inter_bw' is not a rate like 100mbit, 1gbit or 2.5gbit"
  if [[ -n $intra_bw ]]; then
    [[ -n $(bits_per_s "$intra_bw") ]] || bad "--intra-bw: '$intra_bw' is not a rate like 100mbit, 1gbit or 2.5gbit"
    ((ranks <= 200)) || bad "--ranks-per-node: '$ranks' is above 200, the most a two-level node addresses"
  fi
  local i k spec node rate
  rates=()
  for ((i = 0; i < nodes; i++)); do rates+=("$inter_bw"); done
  for spec in ${node_bw[@]+"${node_bw[@]}"}; do
    [[ $spec =~ ^node([0-9]+)=(.*)$ ]] || bad "--node-bw: '$spec' is not nodeI=RATE (e.g. node1=100mbit)"
    node=$((10#${BASH_REMATCH[1]})) rate=${BASH_REMATCH[2]}
    ((node < nodes)) || bad "--node-bw: '$spec' names node$node, but the nodes are node0..node$((nodes - 1))"
    [[ -n $(bits_per_s "$rate") ]] || bad "--node-bw: '$spec': '$rate' is not a rate like 100mbit or 1gbit"
    rates[node]=$rate
  done
  command -v ip >/dev/null && command -v tc >/dev/null && command -v unshare >/dev/null ||
    die "needs ip, tc (iproute2) and unshare (util-linux)"
  command -v mpirun >/dev/null || die "mpirun not found; run scripts/install-deps.sh"
  [[ $(id -u) == 0 ]] || die "must run as root (it creates network namespaces)"

  local wanted="nodes=$nodes ranks_per_node=$ranks rates=${rates[*]} intra=${intra_bw:-shared-memory}"
  if [[ -f $config ]]; then
    local want_rates=("${rates[@]}") want_nodes=$nodes want_ranks=$ranks want_intra=$intra_bw want_like=$like state=
    intra_bw= like=
    read_config
    if [[ $state == up && -n $(namespaces) ]]; then
      local have="nodes=$nodes ranks_per_node=$ranks rates=${rates[*]} intra=${intra_bw:-shared-memory}"
      [[ $have == "$wanted" ]] || die "$name is already up in $dir with $have (asked for $wanted); run '$0 down --dir $dir' first"
      echo "$prog: $name is already up ($have)"
      return
    fi
    nodes=$want_nodes ranks=$want_ranks rates=("${want_rates[@]}") intra_bw=$want_intra like=$want_like
    down >/dev/null  # the leftovers of an up that failed half-way
  elif [[ -n $(namespaces) ]]; then
    die "namespaces $(namespaces | tr '\n' ' ')exist but $dir does not record them; another cluster named $name? (--name picks another prefix; '$0 down --name $name' removes them)"
  fi

  mkdir -p "$dir"
  if [[ -n $like ]]; then
    mv "$like_profile" "$dir/profile.yaml"
    sed "s|$like_profile|$dir/profile.yaml|" "$like_report" >"$dir/like.md"
    sed "s|$like_profile|$dir/profile.yaml|" "$like_report.json" >"$dir/like.json"
    rm -f "$like_report" "$like_report.json"
  fi
  # Written first, so that `down` finds what to remove whatever step below fails.
  printf 'name=%s\nnodes=%s\nranks_per_node=%s\nrates=%s\nintra=%s\nlike=%s\nexchange=%s\nalltoall_group=%s\n' \
    "$name" "$nodes" "$ranks" "${rates[*]}" "$intra_bw" "$like" "$exchange" "$alltoall_group" >"$config"
  printf 'scale_lengths=%s\nslowdown=%s\nsubnet=%s.0.0/16\n' "$scale_lengths" "$slowdown" "$subnet" >>"$config"
  echo "state=starting" >>"$config"
  trap 'echo "$prog: up failed; cleaning up" >&2; down >/dev/null 2>&1 || true' ERR

  local head=$name-head
  ip netns add "$head"
  ip -n "$head" link set lo up
  ip -n "$head" link add br0 type bridge
  ip -n "$head" addr add "$subnet.0.1/16" dev br0
  ip -n "$head" link set br0 up
  printf '127.0.0.1 localhost\n%s.0.1 head\n' "$subnet" >"$dir/hosts"
  : >"$dir/hostfile"
  local ns rank_ns ip4
  for ((i = 0; i < nodes; i++)); do
    ns=$name-node$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # The node's link: eth0 inside the node, n$i on the bridge (both ends are created inside the namespaces).
    ip link add "n$i" netns "$head" type veth peer name eth0 netns "$ns"
    ip -n "$head" link set "n$i" master br0 up
    limit "$ns" eth0 "${rates[i]}"
    limit "$head" "n$i" "${rates[i]}"
    if [[ -z $intra_bw ]]; then
      ip4=$subnet.0.$((10 + i))
      ip -n "$ns" addr add "$ip4/16" dev eth0
      ip -n "$ns" link set eth0 up
      echo "$ip4 node$i" >>"$dir/hosts"
      echo "node$i slots=$ranks" >>"$dir/hostfile"
      continue
    fi
    # Two levels: the node's own bridge joins its link (the inter-node rate) and one link per rank (the intra-node
    # rate), each rank in a namespace of its own.
    ip -n "$ns" link add br0 type bridge
    ip -n "$ns" link set br0 up
    ip -n "$ns" link set eth0 master br0 up
    for ((k = 0; k < ranks; k++)); do
      rank_ns=$ns-r$k ip4=$subnet.$((1 + i)).$((10 + k))
      ip netns add "$rank_ns"
      ip -n "$rank_ns" link set lo up
      ip link add "r$k" netns "$ns" type veth peer name eth0 netns "$rank_ns"
      ip -n "$ns" link set "r$k" master br0 up
      ip -n "$rank_ns" addr add "$ip4/16" dev eth0
      ip -n "$rank_ns" link set eth0 up
      limit "$rank_ns" eth0 "$intra_bw"
      limit "$ns" "r$k" "$intra_bw"
      echo "$ip4 node$i-r$k" >>"$dir/hosts"
      echo "node$i-r$k slots=1" >>"$dir/hostfile"
    done
  done
  if [[ -n $intra_bw ]]; then
    # The hosts dealt across nodes (node0-r0, node1-r0, ..., node0-r1, ...): what --map-by node fills in order.
    : >"$dir/hostfile.by-node"
    for ((k = 0; k < ranks; k++)); do
      for ((i = 0; i < nodes; i++)); do echo "node$i-r$k slots=1" >>"$dir/hostfile.by-node"; done
    done
    # A rank's wrapper: the rank sees its node's hostname (nodeI-rK -> nodeI), as the ranks of one machine do.
    cat >"$dir/rank" <<'EOF'
#!/bin/sh
# Rank wrapper of a two-level emulated cluster (written by scripts/cluster/emucluster.sh up).
host=$(hostname)
exec unshare --uts sh -c 'hostname "$0" && exec "$@"' "${host%-r*}" "$@"
EOF
    chmod 755 "$dir/rank"
  fi

  # mpirun's "ssh": AGENT [ssh options] HOST COMMAND... runs the joined COMMAND (as ssh would) in HOST's
  # namespace, with the hostname HOST (a private UTS namespace: MPI_Get_processor_name and the logs say nodeI) and
  # a private /etc/hosts naming the nodes.
  cat >"$dir/agent" <<EOF
#!/bin/sh
# Launch agent of the emulated cluster $name (written by scripts/cluster/emucluster.sh up).
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1
shift
exec ip netns exec "$name-\$host" unshare --uts --mount sh -c \\
  'hostname "\$0" && mount --bind "$dir/hosts" /etc/hosts && eval "\$*"' "\$host" "\$@"
EOF
  chmod 755 "$dir/agent"
  sed -i 's/^state=starting$/state=up/' "$config"
  trap - ERR
  [[ -z $like ]] || cat "$dir/like.md"
  if [[ -n $intra_bw ]]; then
    echo "$prog: $name is up: $nodes nodes x $ranks ranks, rank links $intra_bw, node links ${rates[*]} (state in $dir)"
  else
    echo "$prog: $name is up: $nodes nodes x $ranks ranks, links ${rates[*]} (state in $dir)"
  fi
}

# limit NS DEV RATE: DEV's egress in NS at RATE. The bucket holds 4 ms of traffic, at least 64 KiB: smaller buckets
# cannot keep a 1gbit link busy on a 2-core machine (it delivered ~750 Mbit/s with 256 KiB).
limit() {
  local burst
  burst=$(awk -v b="$(bits_per_s "$3")" 'BEGIN { x = b / 8 * 0.004; printf "%.0f", (x > 65536 ? x : 65536) }')
  ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$3" burst "$burst" latency 500ms
}

# rate_of NS DEV: the rate tc reports for DEV's limit in NS, or "no limit".
rate_of() { ip netns exec "$1" tc qdisc show dev "$2" 2>/dev/null | grep -oE 'rate [^ ]+' || echo "no limit"; }

status() {
  local state=
  if [[ ! -f $config ]]; then
    [[ -z $(namespaces) ]] || { echo "$prog: namespaces $(namespaces | tr '\n' ' ')exist without a record in $dir"; exit 1; }
    echo "$prog: $name is down"
    exit 1
  fi
  read_config
  echo "$prog: $name ($state) in $dir: $nodes nodes x $ranks ranks${intra_bw:+, rank links $intra_bw}"
  [[ -z $like ]] || echo "  scaled to $like: $dir/like.md"
  local i k ns procs expected=$((nodes + 1))
  for ((i = 0; i < nodes; i++)); do
    ns=$name-node$i
    if ! ip netns list | awk '{print $1}' | grep -qFx "$ns"; then echo "  node$i: namespace $ns missing"; continue; fi
    if [[ -z $intra_bw ]]; then
      procs=$(pids_in "$ns" | wc -l)
      echo "  node$i: $subnet.0.$((10 + i)) $(rate_of "$ns" eth0) (configured ${rates[i]}), $procs processes"
      continue
    fi
    echo "  node$i: link $(rate_of "$ns" eth0) (configured ${rates[i]})"
    for ((k = 0; k < ranks; k++)); do
      expected=$((expected + 1))
      if ! ip netns list | awk '{print $1}' | grep -qFx "$ns-r$k"; then
        echo "    r$k: namespace $ns-r$k missing"
        continue
      fi
      procs=$(pids_in "$ns-r$k" | wc -l)
      echo "    r$k: $subnet.$((1 + i)).$((10 + k)) $(rate_of "$ns-r$k" eth0) (configured $intra_bw), $procs processes"
    done
  done
  [[ $state == up && $(namespaces | wc -l) == "$expected" ]] || exit 1
}

run() {
  local state=
  [[ ${#program[@]} -gt 0 ]] || bad "run needs -- PROGRAM [ARGS...]"
  [[ -z $np || $np =~ ^[1-9][0-9]*$ ]] || bad "--np: '$np' is not a positive whole number"
  [[ $map_by == slot || $map_by == node ]] || bad "--map-by: '$map_by' is not slot or node"
  read_config
  [[ $state == up ]] || die "$name in $dir is not up (state $state)"
  np=${np:-$((nodes * ranks))}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Defaults the caller's environment may override: shared memory inside a node, TCP across; idle ranks yield the
  # core (ranks outnumber cores here, and a spinning rank slows the one that transfers).
  export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp} OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  # Every node is this one machine: binding each node's ranks to "its" first cores would pin the first rank of
  # every node to the same core (2 nodes x 1 rank ran at half speed), so ranks are not bound.
  export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
  local hostfile=$dir/hostfile placement=(--map-by "$map_by" --oversubscribe)
  if [[ -n $intra_bw ]]; then
    # One host a rank, each in its own namespace: TCP only, which crosses the rank's link even inside a node.
    ((np <= nodes * ranks)) || bad "--np: $np ranks, but the two-level cluster has $((nodes * ranks)) rank namespaces"
    export OMPI_MCA_btl=self,tcp
    [[ $map_by == node ]] && hostfile=$dir/hostfile.by-node
    placement=(--map-by slot)
    program=("$dir/rank" "${program[@]}")
  fi
  # mpirun runs in the head namespace (only it reaches the nodes); exec keeps this PID mpirun's, so a signal to
  # this script stops the job. More ranks than slots are allowed in a one-level cluster.
  exec ip netns exec "$name-head" unshare --uts --mount sh -c \
    'hostname head && mount --bind "$0/hosts" /etc/hosts && exec "$@"' "$dir" \
    mpirun -np "$np" --hostfile "$hostfile" "${placement[@]}" \
    --mca plm_rsh_agent "$dir/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include "$subnet.0.0/16" --mca btl_tcp_if_include "$subnet.0.0/16" \
    "${program[@]}"
}


case $action in
  up) up ;;
  down) down ;;
  status) status ;;
  run) run ;;
esac
