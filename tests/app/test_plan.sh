#!/usr/bin/env bash
# trident plan and trident bench profile as a user runs them: plans on the paper's testbed (text and --json, checked
# for validity), length files, the too-long policies, and every bad input exiting 2 (or 1) with one line naming the
# file or key.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_plan.sh tests/app/configs configs/clusters
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_plan.sh CONFIG_DIR CLUSTER_DIR}
clusters=${2:?usage: TRIDENT=/path/to/trident bash test_plan.sh CONFIG_DIR CLUSTER_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cluster="$clusters/a100-8x8-gpt7b.yaml"

# ---- text -------------------------------------------------------------------------------------------------------
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --batch-sequences 128 --batches 2
stdout_has "64 devices (8 per node)" "batch 0: 128 sequences" "batch 1:" "FlexSP (fast):" "micro-batch 0: <" \
  "static SP (degree 64):" "BatchAda (degree" "x faster"
# the trainer's own batches (documents cut at model.max_seq_len, packed to train.batch_tokens)
run 0 plan "$configs/plan.yaml" --cluster "$cluster"
stdout_has "batch 0:" "FlexSP (fast):"
# the cluster from the config instead of --cluster
run 0 plan "$configs/plan.yaml" --set parallel.flexsp.cluster="$cluster" --batch-sequences 32
stdout_has "cluster $cluster: 64 devices"

# ---- the estimates the reproduction reports print (scripts/reproduce/{flexsp,atom}.py), pinned -------------------------
# The cost model's numbers for the papers' setups: a change that moves them shows here, and the pins move with
# results/ (scripts/reproduce/all.sh --quick). Relative tolerance 1e-6: the same arithmetic on any x86-64.
experiments="$(dirname "$clusters")/experiments"
run 0 plan "$experiments/flexsp/flexsp_plan_gpt7b.yaml" --cluster "$cluster" --json --batch-sequences 512 --batches 2
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "FlexSP's planned estimates moved from their pins"
import json, math, sys
pinned = [  # batch: tokens, FlexSP, static SP, BatchAda (seconds)
    (679099, 4.519138906140033, 8.558082682399135, 6.180547332045555),
    (640435, 6.200018967881792, 8.822209540339319, 8.0965918152003),
]
for line, (tokens, flexsp, static, batchada) in zip(open(sys.argv[1]).read().splitlines(), pinned, strict=True):
    b = json.loads(line)
    got = (b["flexsp"]["time_s"], b["static_sp"]["time_s"], b["batchada"]["time_s"])
    assert b["tokens"] == tokens, (b["batch"], b["tokens"], tokens)
    assert all(math.isclose(g, w, rel_tol=1e-6) for g, w in zip(got, (flexsp, static, batchada))), (b["batch"], got)
PY
run 0 plan "$experiments/atom/paper_gpt6.7b.yaml" --cluster "$clusters/rtx4090-8x1-gpt6.7b.yaml" --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "ATOM's planned estimates moved from their pins"
import json, math, sys
p = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert (p["sub_models"], p["recomputed_sub_models"], p["tokens_per_pass"]) == (32, 16, 8192), p["sub_models"]
assert (p["budget_bytes"], p["host_store_bytes"]) == (25769803776, 106534469632), p["host_store_bytes"]
for key, want in (("step_s", 3.2425918464000016), ("exposed_copy_s", 0.5794447360000037),
                  ("resident_step_s", 2.2826975232)):
    assert math.isclose(p[key], want, rel_tol=1e-6), (key, p[key], want)
PY

# ---- --json: one object per batch; every plan valid ----------------------------------------------------------------
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --batch-sequences 256 --batches 2 --json \
  --set parallel.flexsp.solver=milp --set parallel.flexsp.time_limit_s=0.5
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "the JSON plans are not valid"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, len(lines)
for line in lines:
    b = json.loads(line)
    for plan in (b["flexsp"], b["fast"]):
        seen = []
        for mb in plan["micro_batches"]:
            devices = 0
            for g in mb["groups"]:
                d = g["degree"]
                assert d & (d - 1) == 0 and g["first_device"] % d == 0 and g["first_device"] == devices, g
                devices += d
                assert sum(g["lengths"]) == g["tokens"] <= d * 6210, g  # 6210 tokens per device on this cluster
                # the all-to-alls' part of the group's time: none on one device
                assert (g["exchange_s"] == 0) if d == 1 else (0 < g["exchange_s"] < g["time_s"]), g
                seen += g["sequences"]
            assert devices <= 64
        assert sorted(seen) == list(range(b["sequences"])), "each sequence exactly once"
        assert abs(plan["time_s"] - sum(mb["makespan_s"] for mb in plan["micro_batches"])) < 1e-9 * plan["time_s"]
        slowest = [max(mb["groups"], key=lambda g: g["time_s"]) for mb in plan["micro_batches"]]
        assert abs(plan["exchange_s"] - sum(g["exchange_s"] for g in slowest)) < 1e-9 * plan["time_s"], plan
    assert b["flexsp"]["solver"] == "milp" and b["fast"]["solver"] == "fast"
    assert b["flexsp"]["time_s"] <= b["fast"]["time_s"] * (1 + 1e-12), "the MILP is never worse than its warm start"
    assert b["static_sp"]["degree"] == 64 and 0 < b["static_sp"]["exchange_s"] < b["static_sp"]["time_s"]
    # Wikipedia-like lengths at 384K: static SP pays the cross-node all-to-all for every short sequence
    assert b["speedup_vs_static_sp"] > 1.2, b["speedup_vs_static_sp"]
    assert b["speedup_vs_batchada"] >= 1.0 - 1e-9, b["speedup_vs_batchada"]
PY

# ---- length files and sequences longer than the cluster -------------------------------------------------------------
printf '# lengths\n1000 2000 30000\n500000\n120 4096 # a comment\n' >"$tmp/lengths.txt"
run 1 plan "$configs/plan.yaml" --cluster "$cluster" --lengths "$tmp/lengths.txt"
stderr_line "trident: error:" "sequence 3" "500000 tokens" "parallel.flexsp.too_long"
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --lengths "$tmp/lengths.txt" --set parallel.flexsp.too_long=drop
stdout_has "batch 0: 5 sequences" "1 dropped"
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --lengths "$tmp/lengths.txt" --set parallel.flexsp.too_long=split
stdout_has "batch 0: 7 sequences" "1 split"
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --lengths "$tmp/lengths.txt" --set parallel.flexsp.too_long=split --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "the split pieces are not reported"
import json, sys
b = json.loads(open(sys.argv[1]).read())
assert b["split"] == 1 and b["sequences"] == 7, b
assert b["source"] == [[0, 0], [1, 0], [2, 0], [3, 0], [3, 397440], [4, 0], [5, 0]], b["source"]
PY
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --lengths "$tmp/lengths.txt" --set parallel.flexsp.too_long=drop \
  --batch-sequences 2 --batches 10
stdout_has "batch 0: 2 sequences" "batch 1: 1 sequences" "batch 2: 2 sequences"

# ---- bad inputs: exit 2, one line naming the file or key ------------------------------------------------------------
run 2 plan "$configs/plan.yaml"
stderr_line "trident: config error:" "--cluster FILE" "parallel.flexsp.cluster"
# A corpus without a document is refused naming the file, not divided by.
: >"$tmp/empty.txt"
run 2 plan "$configs/plan.yaml" --cluster "$cluster" --batch-sequences 4 --set data.kind=text \
  --set data.path="$tmp/empty.txt" --set model.vocab_size=256
stderr_line "trident: config error:" "data.path = '$tmp/empty.txt'" "holds no document"
run 2 plan "$configs/plan.yaml" --cluster "$tmp/none.yaml"
stderr_line "trident: config error:" "none.yaml" "not found"
sed 's/devices_per_node: 8/gpus_per_node: 8/' "$cluster" >"$tmp/typo.yaml"
run 2 plan "$configs/plan.yaml" --cluster "$tmp/typo.yaml"
stderr_line "trident: config error:" "typo.yaml:7:3:" "cluster.gpus_per_node" "unknown key"
sed 's/beta1_s: .*/beta1_s: fast/' "$cluster" >"$tmp/badvalue.yaml"
run 2 plan "$configs/plan.yaml" --cluster "$tmp/badvalue.yaml"
stderr_line "trident: config error:" "badvalue.yaml:" "compute.beta1_s" "expected a finite number, got 'fast'"
run 2 plan "$configs/plan.yaml" --cluster "$cluster" --set parallel.flexsp.solver=scip
stderr_line "trident: config error:" "parallel.flexsp.solver" "fast, milp"
run 2 plan "$configs/plan.yaml" --cluster "$cluster" --set parallel.flexsp.time_limit_s=0
stderr_line "trident: config error:" "parallel.flexsp.time_limit_s"
printf '100\n2x00\n' >"$tmp/badlengths.txt"
run 2 plan "$configs/plan.yaml" --cluster "$cluster" --lengths "$tmp/badlengths.txt"
stderr_line "trident: config error:" "badlengths.txt:2:" "'2x00'"
run 2 plan "$configs/plan.yaml" --cluster "$cluster" --lengths "$tmp/missing.txt"
stderr_line "trident: config error:" "missing.txt"
run 2 plan "$configs/plan.yaml" --cluster "$cluster" --batch-sequences 0
stderr_line "trident: usage error:"

# ---- bench profile writes compute, memory and model and keeps the network section ----------------------------------
sed -n '/^network:/,/^compute:/p' "$cluster" | sed '$d' >"$tmp/profile.yaml"  # a file with only `network`
run 0 bench profile "$configs/tiny_train.yaml" --out "$tmp/profile.yaml" --repeat 0.05
stdout_has "alpha1" "activation bytes/token"
/usr/bin/python3 - "$tmp/profile.yaml" <<'PY' || fail "the profile lacks a section or lost the network"
import sys
text = open(sys.argv[1]).read()
for key in ("network:", "group_size: 64", "compute:", "alpha1_s_per_token2:", "memory:", "bytes_per_token:",
            "model:", "n_layer: 2", "layers:", "block_forward:", "block_backward:", "outside:"):
    assert key in text, key
PY
# it has no cluster section (the file existed): planning on it says what is missing
run 2 plan "$configs/plan.yaml" --cluster "$tmp/profile.yaml"
stderr_line "trident: config error:" "profile.yaml" "no 'cluster' section"
# a new file gets this machine as its cluster but no network: planning says where a network section comes from
run 0 bench profile "$configs/tiny_train.yaml" --out "$tmp/new.yaml" --repeat 0.05
run 2 plan "$configs/plan.yaml" --cluster "$tmp/new.yaml"
stderr_line "trident: config error:" "new.yaml" "no 'network' section" "bench comm"
# with a copy link, ATOM's swap plan takes the measured blocks per layer and the rest as resident compute
cat >>"$tmp/new.yaml" <<'YAML'
network:
  intra_node: {bandwidth_gb_per_s: 10, latency_us: 1}
  inter_node: {bandwidth_gb_per_s: 10, latency_us: 1}
  host_to_device: {bandwidth_gb_per_s: 1, latency_us: 0}
YAML
run 0 plan "$configs/tiny_train.yaml" --cluster "$tmp/new.yaml" --set parallel.strategy=atom --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "the swap plan did not use the measured blocks"
import json, sys
p = json.loads(open(sys.argv[1]).read())
assert p["layer_costs"] == "measured", p
assert p["layer_forward_s"] > 0 and p["layer_backward_s"] > 0 and p["outside_layers_s"] > 0, p
resident = p["layers"] * (p["layer_forward_s"] + p["layer_backward_s"]) + p["outside_layers_s"]
assert abs(p["resident_step_s"] - resident) <= 1e-9 * resident, p
PY
run 0 plan "$configs/tiny_train.yaml" --cluster "$tmp/new.yaml" --set parallel.strategy=atom
stdout_has "a layer's forward" "measured in the model"
# a profile of another model does not describe this one
run 2 plan "$configs/tiny_train.yaml" --cluster "$tmp/new.yaml" --set parallel.strategy=atom --set model.n_layer=3
stderr_line "trident: config error:" "new.yaml" "2 layers" "model.n_layer"
# Memory is planned, not typed: on 4 ranks, parallel.zero.stage 1 leaves a rank the moments of its quarter of the
# 108,288 parameters (27,072: 8 bytes each instead of all) and adds its all-gather (4 bytes each); stage 2 keeps the
# quarter's gradient instead of the whole (and the windows it is reduced through: on 2 layers more than it frees) and
# reduce-scatters the one pass's gradient instead of all-reducing it; stage 3 keeps the quarter's weights instead of
# the whole (and the windows they are gathered into) and gathers them each pass instead of after the update (on 2
# layers as many bytes, (2 L - 2) / L of the range, in 2 L gathers); train.recompute: full lowers the activations'
# bytes and adds the recomputed forward to the compute, auto only where a pass needs it; a stage the strategy cannot
# take is refused as in training.
sed 's/devices_per_node: 1/devices_per_node: 4/' "$tmp/new.yaml" >"$tmp/four.yaml"
for variant in stage0 stage1 stage2 stage3 recompute as_needed; do
  case $variant in
    stage0) sets=() ;;
    stage1) sets=(--set parallel.zero.stage=1) ;;
    stage2) sets=(--set parallel.zero.stage=2) ;;
    stage3) sets=(--set parallel.zero.stage=3) ;;
    recompute) sets=(--set train.recompute=full) ;;
    as_needed) sets=(--set train.recompute=auto) ;;
  esac
  run 0 plan "$configs/tiny_train.yaml" --cluster "$tmp/four.yaml" --set parallel.strategy=dp --batches 1 --json \
    "${sets[@]}"
  cp "$tmp/out" "$tmp/plan_$variant.json"
done
/usr/bin/python3 - "$tmp"/plan_{stage0,stage1,stage2,stage3,recompute,as_needed}.json <<'PY' || fail "the plan does not account for the stage"
import json, sys
a, b, z, z3, r, n = (json.loads(open(p).read())["candidates"][0] for p in sys.argv[1:7])
assert a["peak_bytes"] - b["peak_bytes"] == 8 * (108288 - 27072), (a, b)
assert b["comm_bytes"] - a["comm_bytes"] == 4 * 27072 and b["comm_s"] > a["comm_s"], (a, b)
C, V, T = 64, 64, 64
layer, final_norm, embeddings, owned = 12 * C * C + 13 * C, 2 * C, V * C + T * C, 27072
windows = owned + final_norm + embeddings + 2 * layer + final_norm + embeddings + 2 * min(layer, owned)
assert b["peak_bytes"] - z["peak_bytes"] == 4 * 108288 - 4 * windows, (b, z)
assert z["comm_bytes"] == b["comm_bytes"] and z["comm_s"] < b["comm_s"], (b, z)
assert z["peak_bytes"] - z3["peak_bytes"] == 4 * 108288 - 4 * (owned + final_norm + embeddings + 2 * layer), (z, z3)
assert z3["comm_bytes"] == z["comm_bytes"] and z3["comm_s"] > z["comm_s"], (z, z3)
assert r["peak_bytes"] < a["peak_bytes"] and r["comm_bytes"] == a["comm_bytes"], (a, r)
# full recomputes the forward of 1 of the 2 layers (a sixth more compute); auto, whose pass fits in 1 GiB, none
assert abs(r["compute_s"] - a["compute_s"] * (1 + 1 / 6)) <= 1e-9 * a["compute_s"], (a, r)
assert n["compute_s"] == a["compute_s"], (a, n)
PY
# FlexSP's plan computes the model states from the config where the profile gives none (the profile's value stays an
# override): 4 bytes a parameter of weights and gradients and 8 of moments at stage 0 on every device; at stage 3
# over the cluster's 64 devices the ranges and windows, so more tokens fit a device.
grep -v "model_states_gb" "$cluster" >"$tmp/computed.yaml"
for stage in 0 3; do
  run 0 plan "$configs/plan.yaml" --cluster "$tmp/computed.yaml" --batches 1 --set parallel.zero.stage=$stage
  cp "$tmp/out" "$tmp/flexsp_z$stage.txt"
done
grep -q "parallel.zero.stage 3 over 64 rank(s)" "$tmp/flexsp_z3.txt" || fail "the plan does not say how it computed the states"
tokens() { sed -n 's/.* \([0-9]*\) tokens per device (model states.*/\1/p' "$1"; }
[[ $(tokens "$tmp/flexsp_z0.txt") -lt $(tokens "$tmp/flexsp_z3.txt") ]] ||
  fail "stage 3 leaves a device $(tokens "$tmp/flexsp_z3.txt") tokens, stage 0 $(tokens "$tmp/flexsp_z0.txt")"
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --batches 1 --set parallel.zero.stage=3
stdout_has "model states 1.828 GiB a device, the profile's memory.model_states_gb"
run 2 plan "$configs/tiny_train.yaml" --cluster "$tmp/four.yaml" --set parallel.strategy=pipeline --set model.n_layer=4 \
  --set parallel.zero.stage=1
stderr_line "trident: config error:" "parallel.zero.stage: 1 does not apply to pipeline"

# ---- bench milp: CBC and GLPK on the same models --------------------------------------------------------------------
run 0 bench --json milp "$configs/plan.yaml" --cluster "$cluster" --batch-sequences 16 \
  --set parallel.flexsp.time_limit_s=0.5
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "bench milp rows are incomplete"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert rows, "no rows"
for r in rows:
    assert r["CBC"] in ("optimal", "feasible") and r["GLPK"] in ("optimal", "feasible", "none"), r
    if r["CBC"] == "optimal" and r["GLPK"] == "optimal":  # the same model: the same optimum
        assert abs(r["CBC makespan s"] - r["GLPK makespan s"]) <= 1e-6 * r["CBC makespan s"], r
PY
run 2 bench milp "$configs/plan.yaml"
stderr_line "trident: config error:" "--cluster FILE"

# ---- FlexSP with LASP inside its groups (linear attention): planned with the state exchange's cost -----------------
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --batch-sequences 32 --set model.attention=linear \
  --set parallel.lasp.variant=auto
stdout_has "LASP-2 inside groups" "FlexSP (fast):"
run 0 plan "$configs/plan.yaml" --cluster "$cluster" --batch-sequences 32 --set model.attention=linear \
  --set parallel.lasp.variant=lasp1 --json
/usr/bin/python3 -c 'import json, sys; b = json.loads(open(sys.argv[1]).read()); assert b["inner"] == "LASP-1" and \
  b["flexsp"]["time_s"] > 0, b' "$tmp/out" || fail "the LASP-inside plan is wrong"
run 2 plan "$configs/plan.yaml" --cluster "$cluster" --set parallel.flexsp.inner=lasp
stderr_line "trident: config error:" "parallel.flexsp.inner: 'lasp'" "'softmax'"

# ---- parallel.strategy: atom: the swap plan -------------------------------------------------------------------------
atom="$clusters/../experiments/atom/atom_gpt1.3b.yaml"
gpu="$clusters/rtx4090-pcie4-gpt1.3b.yaml"
run 0 plan "$atom" --cluster "$gpu"
stdout_has "ATOM swap plan: 24 layers" "sub-models: " "copies exposed" "overlap rule"
run 0 plan "$atom" --cluster "$gpu" --set train.batch_tokens=2048 --json
cp "$tmp/out" "$tmp/atom_short.json"
run 0 plan "$atom" --cluster "$gpu" --set train.batch_tokens=16384 --set device.memory_gb=8 --json
cp "$tmp/out" "$tmp/atom_long.json"
run 0 plan "$atom" --cluster "$gpu" --set parallel.atom.sub_models=12 --json
/usr/bin/python3 - "$tmp/atom_short.json" "$tmp/atom_long.json" "$tmp/out" <<'PY' || fail "the swap plans are wrong"
import json, sys
short, long, twelve = (json.loads(open(p).read()) for p in sys.argv[1:4])
for p in (short, long, twelve):
    parts = p["partition"]
    assert parts[0] == 0 and parts == sorted(set(parts)) and parts[-1] < p["layers"], p
    assert len(parts) == p["sub_models"] and p["peak_bytes"] <= p["budget_bytes"], p
    assert abs(p["step_s"] - (p["forward_s"] + p["backward_s"])) < 1e-12, p
    assert abs(p["exposed_copy_s"] - (p["step_s"] - p["hidden_copies_step_s"])) < 1e-9, p
# below the overlap rule's threshold copies show; above it they hide
assert short["tokens_per_pass"] < short["overlap_threshold_tokens"] < long["tokens_per_pass"], (short, long)
assert short["exposed_copy_s"] / short["step_s"] > 0.2 > 0.05 > long["exposed_copy_s"] / long["step_s"], (short, long)
# a fixed count: balanced, and a pass holds what fits (fewer tokens than the batch here)
assert twelve["partition"] == list(range(0, 24, 2)) and twelve["tokens_per_pass"] < 8192, twelve
assert twelve["tokens_per_pass"] <= twelve["pass_capacity_tokens"] < 8192, twelve
assert twelve["passes"] * twelve["tokens_per_pass"] >= 8192, twelve
PY
# Peers: 8 RTX 4090s, each swapping its share of GPT-3 6.7B, against GPipe over the same GPUs. A slower link slows
# the pipeline's step (activations on its path) and the parameter round, not a peer's own step; the interval that
# hides the round grows as the link slows.
peers="$clusters/../experiments/atom/paper_gpt6.7b.yaml"
run 0 plan "$peers" --cluster "$clusters/rtx4090-8x1-gpt6.7b.yaml"
stdout_has "8 peers over 1.25 GB/s" "ATOM " "pipeline " "GPipe over 8 stages, 32 micro-batches" "ATOM / pipeline: "
for bw in 1.25 0.0125; do
  sed "s/inter_node: {bandwidth_gb_per_s: 1.25/inter_node: {bandwidth_gb_per_s: $bw/" \
    "$clusters/rtx4090-8x1-gpt6.7b.yaml" >"$tmp/peers_$bw.yaml"
  run 0 plan "$peers" --cluster "$tmp/peers_$bw.yaml" --json
  cp "$tmp/out" "$tmp/peers_$bw.json"
done
/usr/bin/python3 - "$tmp/peers_1.25.json" "$tmp/peers_0.0125.json" <<'PY' || fail "the peers' comparison is wrong"
import json, sys
fast, slow = (json.loads(open(p).read())["peers"] for p in sys.argv[1:3])
for p in (fast, slow):
    a, g = p["atom"], p["pipeline"]
    assert p["count"] == 8 and g["stages"] == 8 and g["micro_batches"] == 32, p
    assert a["step_s"] == max(a["peer_step_s"], a["round_s"] / p["average_every"]), a
    assert a["hiding_every"] * a["peer_step_s"] >= a["round_s"] > (a["hiding_every"] - 1) * a["peer_step_s"], a
    assert abs(p["atom_over_pipeline"] - g["step_s"] / a["step_s"]) < 1e-9, p
    assert abs(g["step_s"] - (g["compute_s"] + g["comm_s"])) < 1e-9, g
assert fast["atom"]["peer_step_s"] == slow["atom"]["peer_step_s"], (fast, slow)
assert abs(slow["atom"]["round_s"] / fast["atom"]["round_s"] - 100) < 1, (fast, slow)
assert slow["pipeline"]["step_s"] > 10 * fast["pipeline"]["step_s"] and \
    slow["pipeline"]["compute_s"] == fast["pipeline"]["compute_s"], (fast, slow)
assert slow["hidden_atom_over_pipeline"] > 10 * fast["hidden_atom_over_pipeline"], (fast, slow)
PY
sed 's/nodes: 8/nodes: 33/' "$clusters/rtx4090-8x1-gpt6.7b.yaml" >"$tmp/peers_33.yaml"
run 2 plan "$peers" --cluster "$tmp/peers_33.yaml"
stderr_line "trident: config error:" "peers_33.yaml" "GPipe over its 33 devices" "model.n_layer is 32"
# auto with a model that does not fit the device resident: ATOM's placement, as training would run it
run 0 plan "$configs/tiny_train.yaml" --cluster "$gpu" --set model.n_layer=8 --set model.n_embd=192 \
  --set train.batch_tokens=256 --set device.memory_gb=0.013
stdout_has "ATOM swap plan: 8 layers" "sub-models: 8"
run 2 plan "$atom" --set parallel.select.profile=""
stderr_line "trident: config error:" "parallel.strategy: atom needs a profile" "--cluster FILE"
run 2 plan "$atom" --cluster "$cluster"
stderr_line "trident: config error:" "a100-8x8-gpt7b.yaml" "network.host_to_device"
run 2 plan "$atom" --cluster "$gpu" --set device.memory_gb=0.5
stderr_line "trident: config error:" "device.memory_gb = 0.5" "24 sub-model(s) of up to 1 layer(s) need"
run 0 plan "$atom" --cluster "$gpu" --set parallel.atom.host_memory_gb=64
stdout_has "host store 19.61 GiB of 64.0 GiB host memory"
run 2 plan "$atom" --cluster "$gpu" --set parallel.atom.host_memory_gb=16
stderr_line "trident: config error:" "parallel.atom.host_memory_gb = 16" "19.61 GiB" "does not fit"
run 2 plan "$atom" --cluster "$gpu" --set parallel.atom.sub_models=6
stderr_line "trident: config error:" "parallel.atom.sub_models = 6" "6 sub-model(s) of up to 4 layer(s)"
run 2 plan "$atom" --cluster "$gpu" --set parallel.atom.sub_models=30
stderr_line "trident: config error:" "parallel.atom.sub_models = 30" "24 layers"

echo "all $checks checks passed"
