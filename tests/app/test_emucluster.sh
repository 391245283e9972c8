#!/usr/bin/env bash
# The emulated cluster (scripts/cluster/emucluster.sh) end to end, on real network namespaces, veth links and tc tbf:
#  - bad arguments are usage errors naming the argument;
#  - up/down are idempotent, a failed up and a killed job are cleaned up, and down leaves no namespace, link or
#    process behind;
#  - ranks start on their nodes (hostnames node0/node1), and ranks on one node reach each other over shared memory
#    alone;
#  - a 2-node x 2-rank cluster trains the quickstart model with the losses of 4 local ranks, and with ranks placed
#    round robin, sequence-parallel groups still stay on one node (and the losses still match);
#  - trident bench comm measures the configured rate of a 100mbit link within 15%;
#  - a two-level cluster (a namespace a rank): ranks see their node's hostname, Trident groups them by it, the
#    measured rates are within 20% of those set, and traffic inside a node crosses the rank links (tc's counters);
#  - up --like builds two levels at the rates `trident like` computes for a config's model;
#  - ATOM's averaging parts follow the peers' measured bandwidth (3 nodes, one behind a 100mbit link);
#  - --profile writes a network section that parses as YAML, into a new file or merged into an existing one.
# Each cluster gets a name of its own, so a cluster a user has up is never touched. Every command has a deadline
# and the EXIT trap takes the cluster down, also when a check fails. Needs root and `ip netns` (else skipped, 77).
# Usage: TRIDENT=/path/to/trident bash tests/app/test_emucluster.sh tests/app/configs
set -u
if [[ $(id -u) != 0 ]]; then echo "skipped: network namespaces need root"; exit 77; fi
for tool in ip tc unshare mpirun; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool not found"; exit 77; }
done
probe=trident-probe-$$
if ! ip netns add "$probe" 2>/dev/null; then echo "skipped: cannot create network namespaces here"; exit 77; fi
ip netns del "$probe"
configs=${1:?usage: TRIDENT=/path/to/trident bash test_emucluster.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
emu="$root/scripts/cluster/emucluster.sh"
name=emutest-$$
cl=(--name "$name" --dir "$tmp/cluster")
trap 'timeout 60 bash "$emu" down "${cl[@]}" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
mpirun_env
trident=$(realpath "$trident")

# check DESCRIPTION: numbers and prints the next check.
check() { checks=$((checks + 1)); echo "check $checks: $*"; }
# emu CODE ARGS...: scripts/cluster/emucluster.sh ARGS with this test's cluster, at most 180 s, exit code checked.
emu() {
  local expected=$1 action=$2
  shift 2
  timeout 180 bash "$emu" "$action" "${cl[@]}" "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  [[ $code == "$expected" ]] || fail "cluster/emucluster.sh $action $*: exit code $code, expected $expected"
}
# nothing_left: no namespace, link or state of this cluster remains.
nothing_left() {
  ! ip netns list | grep -q "^$name-" || fail "namespaces left: $(ip netns list | grep "^$name-" | tr '\n' ' ')"
  [[ $(ip -o link show type veth | wc -l) == "$veths" ]] || fail "veth links left in the machine's namespace"
  [[ ! -e $tmp/cluster ]] || fail "state directory $tmp/cluster left"
}
veths=$(ip -o link show type veth | wc -l)
quick=(--set data.kind=synthetic --set data.preset=wikipedia --set data.synthetic_documents=2000
       --set train.steps=3 --set train.batch_tokens=2048 --set train.warmup_steps=1 --set train.eval_every=0
       --set sample.tokens=0 --set checkpoint.every=0 --set train.resume=never)

check "bad arguments: exit 2 naming the argument"
emu 2 up --nodes 0 --ranks-per-node 2 --inter-bw 1gbit; grep -q -- "--nodes: '0'" "$tmp/err" || fail "no --nodes error"
emu 2 up --nodes 2 --ranks-per-node 2 --inter-bw fast; grep -q -- "--inter-bw: 'fast'" "$tmp/err" || fail "no rate error"
emu 2 up --nodes 2 --ranks-per-node 2 --inter-bw 1gbit --node-bw node2=1gbit
grep -q "node2" "$tmp/err" || fail "the --node-bw error does not name node2"
emu 2 up --nodes 2 --inter-bw 1gbit; grep -q -- "--ranks-per-node" "$tmp/err" || fail "no missing --ranks-per-node error"
emu 2 up --nodes 2 --ranks-per-node 2 --inter-bw 1gbit --bogus; grep -q -- "'--bogus'" "$tmp/err" || fail "no unknown-argument error"
emu 2 sideways; grep -q "'sideways'" "$tmp/err" || fail "no unknown-command error"
emu 2 run --map-by board -- true; grep -q -- "--map-by: 'board'" "$tmp/err" || fail "no --map-by error"
emu 2 run --np 4; grep -q -- "-- PROGRAM" "$tmp/err" || fail "run without a program does not say so"
emu 1 run -- true; grep -q "no emulated cluster" "$tmp/err" || fail "run without up does not say so"
run 2 bench comm --max-bytes 2
run 2 bench comm --profile "$tmp/one_rank.yaml"  # one rank measures no link
stderr_line "trident: config error:" "--profile" "1-rank world"
nothing_left

check "an up that fails half-way (tc breaks) leaves nothing behind"
mkdir -p "$tmp/badbin" && printf '#!/bin/sh\nexit 1\n' >"$tmp/badbin/tc" && chmod +x "$tmp/badbin/tc"
PATH="$tmp/badbin:$PATH" emu 1 up --nodes 2 --ranks-per-node 2 --inter-bw 1gbit
nothing_left
emu 0 down
nothing_left

check "up 2 nodes x 2 ranks; up again is a no-op; a different layout is refused"
emu 0 up --nodes 2 --ranks-per-node 2 --inter-bw 1gbit
[[ $(ip netns list | grep -c "^$name-") == 3 ]] || fail "expected namespaces $name-head, -node0, -node1"
emu 0 up --nodes 2 --ranks-per-node 2 --inter-bw 1gbit; grep -q "already up" "$tmp/out" || fail "second up not a no-op"
emu 1 up --nodes 3 --ranks-per-node 2 --inter-bw 1gbit; grep -q "already up" "$tmp/err" || fail "no already-up error"
emu 0 status

check "ranks start on their nodes: node0 node0 node1 node1"
emu 0 run -- sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"'
[[ $(sort "$tmp/out" | cut -d' ' -f2 | tr '\n' ' ') == "node0 node0 node1 node1 " ]] || fail "ranks on the wrong nodes"

check "shared memory alone (no TCP) connects the two ranks of a node"
OMPI_MCA_btl=self,vader emu 0 run --np 2 -- "$trident" bench comm --max-bytes 4096 --json
grep -q '"ranks":"2","nodes":"1","groups":"1"' "$tmp/out" || fail "no measurement of a pair on one node"

check "2 nodes x 2 ranks train the quickstart model with the losses of 4 local ranks"
emu 0 run -- "$trident" train "$root/configs/quickstart.yaml" "${quick[@]}" --set run.dir="$tmp/emu_run"
mpi 4 0 train "$root/configs/quickstart.yaml" "${quick[@]}" --set run.dir="$tmp/local_run"
grep -q '"world_size":4' "$tmp/emu_run/metrics.jsonl" || fail "the emulated run is not a 4-rank world"
close "$tmp/emu_run" "$tmp/local_run" 1e-5

check "sequence-parallel groups stay on a node when ranks are placed round robin, with the losses of local ranks"
lasp=("$configs/tiny_train.yaml" --set model.attention=linear --set parallel.strategy=lasp --set parallel.sp.size=2
      --set train.steps=4 --set train.warmup_steps=1 --set train.eval_every=0 --set checkpoint.every=0)
emu 0 run --map-by node -- "$trident" train "${lasp[@]}" --set run.dir="$tmp/emu_lasp"
mpi 4 0 train "${lasp[@]}" --set run.dir="$tmp/local_lasp"
grep -q "\[rank 0\].*this rank's group: ranks \[0, 2\]" "$tmp/emu_lasp/trident.log" ||
  fail "rank 0 (node0 with rank 2) is not grouped with rank 2: $(grep "group:" "$tmp/emu_lasp/trident.log")"
grep -q "\[rank 1\].*this rank's group: ranks \[1, 3\]" "$tmp/emu_lasp/trident.log" || fail "rank 1 not grouped with 3"
close "$tmp/emu_lasp" "$tmp/local_lasp" 1e-5

check "bench comm --profile writes a new profile: cluster and network sections"
emu 0 run -- "$trident" bench comm "$root/configs/quickstart.yaml" --max-bytes 65536 --repeat 0.05 --profile "$tmp/new.yaml"
/usr/bin/python3 - "$tmp/new.yaml" <<'PY' || fail "$tmp/new.yaml is not the expected profile: $(cat "$tmp/new.yaml")"
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
assert set(p) == {"cluster", "network"}, p
assert p["cluster"]["nodes"] == 2 and p["cluster"]["devices_per_node"] == 2, p["cluster"]
assert set(p["cluster"]) == {"name", "nodes", "devices_per_node", "device_memory_gb"}, p["cluster"]
assert p["cluster"]["device_memory_gb"] == 4.0, p["cluster"]  # quickstart.yaml's device.memory_gb
net = p["network"]
for link in ("intra_node", "inter_node"):
    assert set(net[link]) == {"bandwidth_gb_per_s", "latency_us"}, net[link]
    assert all(isinstance(v, float) and v > 0 for v in net[link].values()), net[link]
spans = {(a["group_size"], a["nodes"]) for a in net["alltoall"]}
assert spans == {(2, 1), (2, 2), (4, 2)}, spans
assert all(isinstance(a["bandwidth_gb_per_s"], float) for a in net["alltoall"]), net["alltoall"]
PY

check "bench comm --profile into an existing file replaces network and keeps the other sections"
cat >"$tmp/old.yaml" <<'YAML'
cluster: {name: mine, nodes: 8, devices_per_node: 8, device_memory_gb: 40}
network:
  intra_node: {bandwidth_gb_per_s: 1.0, latency_us: 1.0}
  inter_node: {bandwidth_gb_per_s: 1.0, latency_us: 1.0}
compute: {alpha1_s_per_token2: 0.0, alpha2_s_per_token: 0.0, beta1_s: 0.002}
YAML
emu 0 run -- "$trident" bench comm --max-bytes 4096 --repeat 0.05 --profile "$tmp/old.yaml"
/usr/bin/python3 - "$tmp/old.yaml" <<'PY' || fail "$tmp/old.yaml was not merged: $(cat "$tmp/old.yaml")"
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
assert list(p) == ["cluster", "network", "compute"], list(p)
assert p["cluster"] == {"name": "mine", "nodes": 8, "devices_per_node": 8, "device_memory_gb": 40}, p["cluster"]
assert p["compute"]["beta1_s"] == 0.002, p["compute"]
assert "alltoall" in p["network"], p["network"]  # the old section had none
PY
printf 'network: [unclosed\n' >"$tmp/broken.yaml"
emu 2 run -- "$trident" bench comm --max-bytes 4096 --profile "$tmp/broken.yaml"
grep -q "broken.yaml" "$tmp/err" || fail "the error does not name the broken profile"

check "a killed job: down stops its ranks and removes everything"
timeout 120 bash "$emu" run "${cl[@]}" -- "$trident" train "$root/configs/quickstart.yaml" "${quick[@]}" \
  --set train.steps=100000 --set run.dir="$tmp/killed" >/dev/null 2>&1 &
job=$!
disown "$job"  # no "Killed" notice from the shell
for _ in $(seq 1 300); do [[ -s $tmp/killed/metrics.jsonl ]] && break; sleep 0.1; done
[[ -s $tmp/killed/metrics.jsonl ]] || fail "the job logged no step within 30 s"
ranks=$(ip netns pids "$name-head"; ip netns pids "$name-node0"; ip netns pids "$name-node1")
[[ -n $ranks ]] || fail "no process runs in the nodes"
kill -KILL "$job" 2>/dev/null  # timeout itself: mpirun, orteds and ranks are left without their parent
emu 0 down
for pid in $ranks; do  # a zombie waiting for init to reap it has left the namespaces and runs nothing
  [[ ! -e /proc/$pid ]] || [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]] || fail "process $pid survived down"
done
nothing_left
emu 0 down
grep -q "was not up" "$tmp/out" || fail "a second down does not say there was nothing to do"

check "two levels: a namespace a rank, each rank sees its node's hostname"
emu 2 up --nodes 2 --ranks-per-node 2 --inter-bw 1gbit --intra-bw slow; grep -q -- "--intra-bw: 'slow'" "$tmp/err" ||
  fail "no --intra-bw error"
emu 0 up --nodes 2 --ranks-per-node 2 --inter-bw 100mbit --intra-bw 400mbit
[[ $(ip netns list | grep -c "^$name-") == 7 ]] || fail "expected head, 2 node and 4 rank namespaces"
emu 0 status
grep -q "r1: 10.99.2.11 rate 400Mbit" "$tmp/out" || fail "status does not show node1's second rank link"
emu 0 run --map-by node -- sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"'
[[ $(sort "$tmp/out" | tr '\n' ' ') == "0 node0 1 node1 2 node0 3 node1 " ]] || fail "ranks on the wrong nodes"
emu 2 run --np 5 -- true; grep -q "4 rank namespaces" "$tmp/err" || fail "no error for more ranks than namespaces"

check "two levels: rates measured within 20% of those set; traffic inside a node crosses the rank links, not memory"
# One pair at a time, so that no other flow shares a link: ranks 0 and 1 on node0 (two 400mbit rank links), then
# ranks 0 and 1 dealt to node0 and node1 (rank links and both 100mbit node links: the slowest counts).
sent() { ip netns exec "$name-node0" tc -s qdisc show dev r1 | awk '/Sent/ {print $2; exit}'; }
before=$(sent)
emu 0 run --np 2 -- "$trident" bench comm --max-bytes 4194304 --repeat 0.05 --json
(($(sent) - before > 4000000)) || fail "rank 1's link carried $(($(sent) - before)) bytes of node0's traffic"
cp "$tmp/out" "$tmp/inside.jsonl"
emu 0 run --np 2 --map-by node -- "$trident" bench comm --max-bytes 4194304 --repeat 0.05 --json
/usr/bin/python3 - "$tmp/inside.jsonl" "$tmp/out" <<'PY' || fail "measured rates are not within 20% of the configured"
import json, sys
for path, nodes, expected in ((sys.argv[1], "1", 400e6), (sys.argv[2], "2", 100e6)):
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    row = next(r for r in rows
               if r["bench"].startswith("sendrecv") and r["nodes"] == nodes and r["bytes"] == "4194304")
    measured = row["busbw GB/s"] * 8e9
    print(f"sendrecv 4 MiB on {nodes} node(s): {measured / 1e6:.1f} Mbit/s, configured {expected / 1e6:.0f}")
    assert abs(measured / expected - 1) <= 0.2, (nodes, measured)
PY

check "two levels: ranks placed round robin still group by node (host name), with the losses of local ranks"
emu 0 run --map-by node -- "$trident" train "${lasp[@]}" --set run.dir="$tmp/two_level_lasp"
grep -q "\[rank 0\].*this rank's group: ranks \[0, 2\]" "$tmp/two_level_lasp/trident.log" ||
  fail "rank 0 (node0 with rank 2) is not grouped with rank 2: $(grep "group:" "$tmp/two_level_lasp/trident.log")"
close "$tmp/two_level_lasp" "$tmp/local_lasp" 1e-5
emu 0 down
nothing_left

check "--like: two levels whose rates trident like computed for the config's model on this machine"
emu 2 up --nodes 2 --ranks-per-node 2 --like "$root/configs/clusters/a100-8x8-gpt7b.yaml"
grep -q -- "--like needs --config" "$tmp/err" || fail "no error for --like without --config"
testbed=$root/configs/clusters/a100-8x8-gpt7b.yaml
emu 2 up --nodes 2 --ranks-per-node 2 --like "$testbed" --config "$configs/tiny_train.yaml" --inter-bw 1gbit
grep -q -- "leave out --inter-bw" "$tmp/err" || fail "no error for --like with --inter-bw"
emu 2 up --nodes 2 --ranks-per-node 2 --like "$tmp/no_testbed.yaml" --config "$configs/tiny_train.yaml"
grep -q -- "--like: '$tmp/no_testbed.yaml' is not a file" "$tmp/err" || fail "no error naming the missing testbed"
TRIDENT=$trident emu 0 up --nodes 2 --ranks-per-node 2 --like "$root/configs/clusters/a100-8x8-gpt7b.yaml" \
  --config "$configs/tiny_train.yaml"
[[ $(ip netns list | grep -c "^$name-") == 7 ]] || fail "--like did not build two levels"
rates=$(sed -n 's/^emucluster: --intra-bw \([^ ]*\) --inter-bw \([^ ]*\) .*/\1 \2/p' "$tmp/cluster/like.md")
grep -q "| testbed | GPT-7B" "$tmp/cluster/like.md" || fail "like.md lacks the testbed's row"
emu 0 status
grep -q "scaled to .*a100-8x8-gpt7b.yaml" "$tmp/out" || fail "status does not name the testbed"
grep -q "r0: .*(configured ${rates% *})" "$tmp/out" || fail "rank links are not at trident like's rate ${rates% *}"
grep -q "node1: link .*(configured ${rates#* })" "$tmp/out" || fail "node links are not at trident like's ${rates#* }"
cp "$tmp/cluster/profile.yaml" "$tmp/tiny_profile.yaml"
cp "$tmp/cluster/like.json" "$tmp/default_like.json"
emu 0 down
nothing_left

check "--slowdown S: the links for ranks that compute S times slower than the profile"
emu 2 up --nodes 2 --ranks-per-node 2 --inter-bw 1gbit --slowdown 4
grep -q -- "--slowdown belongs with --like" "$tmp/err" || fail "no error for --slowdown without --like"
emu 2 up --nodes 2 --ranks-per-node 2 --like "$root/configs/clusters/a100-8x8-gpt7b.yaml" \
  --config "$configs/tiny_train.yaml" --profile "$tmp/tiny_profile.yaml" --slowdown 0
grep -q -- "--slowdown: '0' is not a positive number" "$tmp/err" || fail "no error naming the bad --slowdown"
TRIDENT=$trident emu 0 up --nodes 2 --ranks-per-node 2 --like "$root/configs/clusters/a100-8x8-gpt7b.yaml" \
  --config "$configs/tiny_train.yaml" --profile "$tmp/tiny_profile.yaml" --slowdown 8
/usr/bin/python3 - "$tmp/default_like.json" "$tmp/cluster/like.json" <<'PY' || fail "--slowdown 8 did not scale the links"
import json, sys
default, slow = (json.load(open(p)) for p in sys.argv[1:])
assert slow["slowdown"] == 8, slow
# links scale as 1 / slowdown: the default's (ranks / cores, at least 1) over 8
for link in ("intra_bytes_per_s", "inter_bytes_per_s"):
    ratio = slow["here"][link] / default["here"][link]
    assert abs(ratio - default["slowdown"] / 8) < 1e-6, (link, ratio, default["slowdown"])
PY
emu 0 down
nothing_left

check "--like --exchange pipeline: the link a pipeline's stage boundary needs at ATOM's testbed's ratios"
emu 2 up --nodes 2 --ranks-per-node 1 --inter-bw 1gbit --exchange pipeline
grep -q -- "--exchange belongs with --like" "$tmp/err" || fail "no error for --exchange without --like"
atom_testbed=$root/configs/clusters/rtx4090-8x1-gpt6.7b.yaml
emu 2 up --nodes 2 --ranks-per-node 1 --like "$atom_testbed" --config "$configs/tiny_train.yaml" --exchange ring
grep -q -- "--exchange: 'ring' is not sequence or pipeline" "$tmp/err" || fail "no error naming the bad exchange"
emu 2 up --nodes 2 --ranks-per-node 1 --inter-bw 1gbit --profile "$tmp/tiny_profile.yaml"
grep -q -- "--profile belongs with --like" "$tmp/err" || fail "no error for --profile without --like"
emu 2 up --nodes 2 --ranks-per-node 1 --like "$atom_testbed" --config "$configs/tiny_train.yaml" --profile "$tmp/none"
grep -q -- "--profile: '$tmp/none' is not a file" "$tmp/err" || fail "no error naming the missing profile"
emu 2 up --nodes 2 --ranks-per-node 1 --inter-bw 1gbit --scale-lengths
grep -q -- "--scale-lengths belongs with --like" "$tmp/err" || fail "no error for --scale-lengths without --like"
emu 2 up --nodes 2 --ranks-per-node 1 --inter-bw 1gbit --alltoall-group 64
grep -q -- "--alltoall-group belongs with --like" "$tmp/err" || fail "no error for --alltoall-group without --like"
emu 2 up --nodes 2 --ranks-per-node 1 --like "$atom_testbed" --config "$configs/tiny_train.yaml" --alltoall-group x
grep -q -- "--alltoall-group: 'x' is not a whole number" "$tmp/err" || fail "no error naming the bad --alltoall-group"
emu 2 up --nodes 2 --ranks-per-node 1 --like "$atom_testbed" --config "$configs/tiny_train.yaml" --alltoall-group 8 \
  --exchange pipeline
grep -q -- "--alltoall-group belongs with --exchange sequence" "$tmp/err" ||
  fail "no error for --alltoall-group with a pipeline"
# --profile: the earlier cluster's measurement, not a new one
TRIDENT=$trident emu 0 up --nodes 2 --ranks-per-node 1 --like "$atom_testbed" --config "$configs/tiny_train.yaml" \
  --exchange pipeline --profile "$tmp/tiny_profile.yaml"
! grep -q "profiling" "$tmp/err" || fail "--profile measured a new profile"
cmp -s "$tmp/tiny_profile.yaml" "$tmp/cluster/profile.yaml" || fail "the cluster does not keep the given profile"
grep -q "a pipeline's stage boundary" "$tmp/cluster/like.md" || fail "like.md does not scale a pipeline"
grep -q "| testbed | GPT-3 6.7B .* | 8 " "$tmp/cluster/like.md" || fail "like.md lacks the testbed's 8 stages"
/usr/bin/python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["exchange"] == "pipeline" and o["testbed"]["stages"] == 8 and o["here"]["round_tokens"] > 0, o' \
  "$tmp/cluster/like.json" || fail "like.json lacks the pipeline scaling's figures"
emu 0 status
grep -q "node1: link .*(configured $(sed -n 's/^emucluster: .* --inter-bw \([^ ]*\) .*/\1/p' \
  "$tmp/cluster/like.md"))" "$tmp/out" || fail "the node link is not at trident like's pipeline rate"
emu 0 down
nothing_left

check "bench comm measures a 100mbit link within 15% (node0 1gbit, node1 100mbit: the slower link counts)"
emu 0 up --nodes 2 --ranks-per-node 1 --inter-bw 1gbit --node-bw node1=100mbit
emu 0 run -- "$trident" bench comm --max-bytes 1048576 --repeat 0.05 --json
/usr/bin/python3 - "$tmp/out" 100e6 <<'PY' || fail "measured bandwidth is not within 15% of the configured rate"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
row = next(r for r in rows if r["bench"].startswith("sendrecv") and r["nodes"] == "2" and r["bytes"] == "1048576")
measured = row["busbw GB/s"] * 8e9  # bits per second
print(f"sendrecv 1 MiB across nodes: {measured / 1e6:.1f} Mbit/s, configured {float(sys.argv[2]) / 1e6:.0f}")
assert abs(measured / float(sys.argv[2]) - 1) <= 0.15, measured
PY
emu 0 down
nothing_left

check "ATOM's averaging rounds are split by measured bandwidth: the peer behind a 100mbit link sums the least"
emu 0 up --nodes 3 --ranks-per-node 1 --inter-bw 1gbit --node-bw node2=100mbit
emu 0 run -- "$trident" train "$configs/tiny_train.yaml" --set parallel.strategy=atom --set parallel.atom.average_every=2 \
  --set train.steps=6 --set train.eval_every=0 --set checkpoint.every=0 --set run.dir="$tmp/emu_atom"
/usr/bin/python3 - "$tmp/emu_atom/trident.log" <<'PY' || fail "the averaging split does not follow the links' rates"
import re, sys
line = next(l for l in open(sys.argv[1]) if "butterfly" in l)
print(line.split("] ", 3)[-1].strip())
parts = {int(r): (float(p), float(b)) for r, p, b in re.findall(r"rank (\d) ([\d.]+)% \(([\d.e-]+) GB/s\)", line)}
assert sorted(parts) == [0, 1, 2], parts
assert parts[2][0] < 15 and parts[0][0] > 30 and parts[1][0] > 30, parts
assert min(parts[0][1], parts[1][1]) > 4 * parts[2][1], parts  # configured 10x apart
PY
emu 0 down
nothing_left

echo "all $checks checks passed"
