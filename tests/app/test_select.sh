#!/usr/bin/env bash
# parallel.strategy: auto end to end under mpirun (oversubscribed): with a memory budget that holds a long document
# only when a group shares it, the selector switches between data parallelism and 4-rank groups from step to step and
# still gives the single-rank losses; mode `model` resumes bit for bit choosing what the uninterrupted run chose;
# FlexSP trains with groups planned per micro-batch (single-rank losses, the plan it chose and why, bit-exact resume
# with a profile file and its corrections kept in the checkpoint); a
# run without a profile measures one at start-up and keeps its corrections in checkpoints; `trident plan` shows the
# candidates; and every bad input is a one-line configuration error before any step.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_select.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_select.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mpirun_env
tiny="$configs/tiny_train.yaml"
# 256-token batches of documents up to 256 tokens; 0.003 GiB holds 104 tokens a rank: a batch whose long document
# lands whole on one rank cannot run data-parallel, a 4-rank group runs it in slices of 64.
base=(--set model.attention=linear --set model.max_seq_len=256 --set train.batch_tokens=256 --set train.steps=12
      --set train.warmup_steps=2 --set train.eval_every=6 --set checkpoint.keep=5 --set parallel.lasp.variant=auto)
small=(--set device.memory_gb=0.003)
# Messages are slow to start (2 ms): a group pays more than data parallelism's imbalance costs, so data parallelism
# runs every batch it can.
cat >"$tmp/node4.yaml" <<'YAML'
cluster: {name: one node of four, nodes: 1, devices_per_node: 4, device_memory_gb: 1}
network:
  intra_node: {bandwidth_gb_per_s: 1.0, latency_us: 2000}
  inter_node: {bandwidth_gb_per_s: 1.0, latency_us: 2000}
compute: {alpha1_s_per_token2: 1.0e-9, alpha2_s_per_token: 2.0e-5, beta1_s: 0.0005}
YAML
model=(--set parallel.select.mode=model --set parallel.select.profile="$tmp/node4.yaml")
# config_error TEXT...: under mpirun each rank prints the error line and mpirun adds its own report: the first line
# trident wrote is a configuration error containing each TEXT.
config_error() {
  local line text
  line=$(grep -m 1 "^trident: config error:" "$tmp/err") || fail "no 'trident: config error:' line"
  for text in "$@"; do [[ $line == *"$text"* ]] || fail "the error line lacks '$text'"; done
}

# python3_corrections RUN SLOWDOWN: each step of a FlexSP run planned with the corrections the rule gives, when every
# group's measured time is its estimate times SLOWDOWN's factor for its degree: step k's plan knows the degrees
# measured in steps 1 .. k-2 (step 0 is not counted; step k is planned while step k-1 trains), each at its factor,
# the others at the mean of those.
python3_corrections() {
  /usr/bin/python3 - "$1/metrics.jsonl" "$2" <<'PY' || fail "$1: the plans' corrections do not follow the rule"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
slow = {int(d): float(f) for d, f in (p.split(":") for p in sys.argv[2].split(","))}
for k, r in enumerate(rows):
    seen = {g[0] for j in range(1, k - 1) for mb in rows[j]["group_times"] for g in mb}
    factors = {d: slow.get(d, 1.0) for d in seen}
    want = {str(d): factors.get(d, sum(factors.values()) / len(factors)) for d in (1, 2, 4)} if factors else {}
    got = r["plan_corrections"]
    assert got.keys() == want.keys() and all(abs(got[d] - want[d]) <= 1e-9 * want[d] for d in want), (k, got, want)
PY
}
# same_steps A B: run B resumed from A's step 6 checkpoint: steps 6-11 have the same losses, plans and corrections.
same_steps() {
  /usr/bin/python3 - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PY'
import json, sys
a = {r["step"]: r for r in map(json.loads, open(sys.argv[1]))}
b = {r["step"]: r for r in map(json.loads, open(sys.argv[2]))}
keys = ("loss", "groups", "plan", "plan_estimates", "plan_corrections", "group_times")
assert sorted(b) == list(range(6, 12)) and all([a[s][k] for k in keys] == [b[s][k] for k in keys] for s in b), \
    [(s, [(a[s][k], b[s][k]) for k in keys if a[s][k] != b[s][k]]) for s in b]
PY
}

# The reference: one rank with room for any document.
mpi 1 0 train "$tiny" "${base[@]}" --set run.dir="$tmp/single"

# auto on 4 ranks, mode model: both kinds of step happen, each logged with its estimate and every candidate; the
# losses and evaluation losses are the single rank's.
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" "${model[@]}" --set checkpoint.every=6 --set run.dir="$tmp/auto"
close "$tmp/single" "$tmp/auto" 1e-5
/usr/bin/python3 - "$tmp/single/metrics.jsonl" "$tmp/auto/metrics.jsonl" <<'PY' || fail "auto's metrics are wrong"
import json, sys
single, auto = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
ran = [(r["strategy"], r["degree"]) for r in auto]
assert ("dp", 1) in ran and any(s > 1 for _, s in ran), ran  # switches between the two
for r in auto:
    assert r["estimate_ms"] > 0 and r["predicted_ms"] == r["estimate_ms"], r  # mode model: no corrections
    names = [(c["strategy"], c["degree"]) for c in r["candidates"]]
    assert names == [("dp", 1), ("lasp1", 2), ("lasp2", 2), ("ulysses", 2), ("lasp1", 4), ("lasp2", 4),
                     ("ulysses", 4), ("flexsp", 0), ("flexsp-lasp", 0)], names
    feasible = [c for c in r["candidates"] if "infeasible" not in c]
    best = min(feasible, key=lambda c: c["predicted_ms"])
    assert (best["strategy"], best["degree"]) == (r["strategy"], r["degree"]), r
    # data parallelism whenever it can, a group exactly when one rank cannot hold a replica's share
    assert (r["strategy"] == "dp") == ("infeasible" not in r["candidates"][0]), r
    if r["strategy"] != "dp":
        assert "above its activation capacity of 104 tokens" in r["candidates"][0]["infeasible"], r
    assert r["comm_bytes"] > 0
ev = lambda rs: [r["eval_loss"] for r in rs if "eval_loss" in r]
assert len(ev(auto)) == 2 and all(abs(a - b) <= 1e-5 * a for a, b in zip(ev(single), ev(auto))), (ev(single), ev(auto))
PY

# With parallel.atom.average_every, ATOM's averaging peers are a candidate too: where they run, the step's loss is
# still the single rank's (its parameters are), and leaving them synchronizes the peers first.
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" "${model[@]}" --set parallel.atom.average_every=2 \
  --set run.dir="$tmp/auto_atom"
/usr/bin/python3 - "$tmp/single/metrics.jsonl" "$tmp/auto_atom/metrics.jsonl" <<'PY' || fail "auto with ATOM is wrong"
import json, sys
single, auto = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
ran = [r["strategy"] for r in auto]
assert "atom" in ran and any(s != "atom" for s in ran), ran
for r in auto:
    names = [c["strategy"] for c in r["candidates"]]
    assert names[:2] == ["dp", "atom"], names
first = ran.index("atom")  # every step before it was exact: the same parameters, the same loss
assert abs(auto[first]["loss"] - single[first]["loss"]) <= 1e-5 * single[first]["loss"], (auto[first], single[first])
assert all(abs(a["loss"] - b["loss"]) <= 0.05 * b["loss"] for a, b in zip(auto, single)), (auto, single)
PY

# Resume (mode model): from step 6, the same strategies and bit-identical losses.
mkdir -p "$tmp/resumed/checkpoints"
cp -r "$tmp/auto/checkpoints/step_00000006" "$tmp/resumed/checkpoints/"
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" "${model[@]}" --set run.dir="$tmp/resumed"
grep -q "resuming from" "$tmp/resumed/trident.log" || fail "the auto run did not resume"
/usr/bin/python3 - "$tmp/auto/metrics.jsonl" "$tmp/resumed/metrics.jsonl" <<'PY' || fail "the resumed auto run diverged"
import json, sys
a = {r["step"]: r for r in map(json.loads, open(sys.argv[1]))}
b = {r["step"]: r for r in map(json.loads, open(sys.argv[2]))}
assert sorted(b) == list(range(6, 12)), sorted(b)
for s in b:
    assert (a[s]["strategy"], a[s]["degree"], a[s]["loss"]) == (b[s]["strategy"], b[s]["degree"], b[s]["loss"]), s
PY

# A fixed strategy keeps working beside auto: sp (LASP on groups of 4) and dp, with the single rank's losses.
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" --set parallel.strategy=sp --set parallel.sp.size=4 \
  --set run.dir="$tmp/sp4"
close "$tmp/single" "$tmp/sp4" 1e-5
grep -q '"strategy":"lasp[12]","degree":4' "$tmp/sp4/metrics.jsonl" || fail "sp does not record its LASP variant"
grep -q '"candidates"' "$tmp/sp4/metrics.jsonl" && fail "a fixed strategy lists candidates"
mpi 2 0 train "$tiny" "${base[@]}" --set parallel.strategy=dp --set run.dir="$tmp/dp2"
close "$tmp/single" "$tmp/dp2" 1e-5

# FlexSP trains: groups planned per micro-batch, the single rank's losses, the layouts in the metrics; with a
# profile file its plans are a pure function of the batch and its corrections, and measured times that do not depend
# on the machine (single ranks at 4x their estimate: TRIDENT_TEST_FLEXSP_SLOWDOWN) make the corrections the same in
# every run, so it resumes bit for bit. The linear model runs LASP inside its groups (parallel.flexsp.inner: auto),
# and Ulysses when asked.
export TRIDENT_TEST_FLEXSP_SLOWDOWN=1:4
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" --set parallel.strategy=flexsp \
  --set parallel.select.profile="$tmp/node4.yaml" --set checkpoint.every=6 --set run.dir="$tmp/flexsp"
close "$tmp/single" "$tmp/flexsp" 1e-5
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" --set parallel.strategy=flexsp --set parallel.flexsp.inner=ulysses \
  --set parallel.select.profile="$tmp/node4.yaml" --set run.dir="$tmp/flexsp_ulysses"
close "$tmp/single" "$tmp/flexsp_ulysses" 1e-5
grep -q '"strategy":"flexsp","degree":0' "$tmp/flexsp_ulysses/metrics.jsonl" ||
  fail "parallel.flexsp.inner=ulysses did not run Ulysses inside FlexSP's groups"
/usr/bin/python3 - "$tmp/flexsp/metrics.jsonl" <<'PY' || fail "FlexSP's metrics are wrong"
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["strategy"] == "flexsp-lasp" and r["degree"] == 0 and r["estimate_ms"] > 0 for r in rows), rows
assert all(re.fullmatch(r"(<[0-9x, ]+> ?)+", r["groups"]) for r in rows), [r["groups"] for r in rows]
assert any("2" in r["groups"] or "4" in r["groups"] for r in rows), [r["groups"] for r in rows]
assert all(r["plan_ms"] >= 0 and isinstance(r["plan_ready"], bool) for r in rows), rows  # planned ahead, timed
for r in rows:  # each group's estimate beside its measured time, micro-batch by micro-batch, as the layout says
    assert " ".join("<" + ", ".join(str(g[0]) for g in mb) + ">" for mb in r["group_times"]).replace(" ", "") \
        .count("<") == r["groups"].count("<"), r
    assert all(g[1] > 0 and g[2] > 0 and g[3] > 0 for mb in r["group_times"] for g in mb), r
    # 4 ranks reduce gradients during a rank's last backward: the step's last micro-batch carries it
    assert all(isinstance(g[4], bool) for mb in r["group_times"] for g in mb), r
    assert all(g[4] for g in r["group_times"][-1]), r
for r in rows:  # the plan that ran is the fastest under the corrections it was planned with
    e = r["plan_estimates"]
    assert r["plan"] in ("flexsp", "batchada") and e["batchada_degree"] >= 1 and e["static_sp_degree"] == 4, r
    ran = e["flexsp_ms"] if r["plan"] == "flexsp" else e["batchada_ms"]
    assert ran <= min(e["flexsp_ms"], e["batchada_ms"], e["static_sp_ms"]), r
PY
python3_corrections "$tmp/flexsp" 1:4
mkdir -p "$tmp/flexsp_resumed/checkpoints"
cp -r "$tmp/flexsp/checkpoints/step_00000006" "$tmp/flexsp_resumed/checkpoints/"
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" --set parallel.strategy=flexsp \
  --set parallel.select.profile="$tmp/node4.yaml" --set run.dir="$tmp/flexsp_resumed"
same_steps "$tmp/flexsp" "$tmp/flexsp_resumed" || fail "FlexSP resume diverged"

# Corrections change FlexSP's plans: documents of 120 and 30-40 tokens put a pair beside single ranks; single ranks
# measured at 20x their estimate send the short documents to pairs from the first step planned after that was
# measured. The losses stay the single rank's; a resumed run plans as the uninterrupted one did, because the
# checkpoint keeps the corrections and those the next step's plan was made with.
/usr/bin/python3 - "$tmp/docs.u16" <<'PY'
import array, random, sys
random.seed(3)
ids = array.array("H")
for _ in range(200):
    for n in (121, 31, 31, 31, 41):  # a document of n ids trains n - 1 tokens
        ids.extend(random.randrange(63) for _ in range(n))
        ids.append(63)
open(sys.argv[1], "wb").write(ids.tobytes())
PY
docs=(--set model.max_seq_len=128 --set data.kind=tokens --set data.path="$tmp/docs.u16" --set data.token_dtype=uint16
      --set data.eot_token=63)
mixed=("${docs[@]}" "${small[@]}" --set parallel.strategy=flexsp --set parallel.select.profile="$tmp/node4.yaml")
mpi 1 0 train "$tiny" "${base[@]}" "${docs[@]}" --set run.dir="$tmp/mixed_single"
mpi 4 0 train "$tiny" "${base[@]}" "${mixed[@]}" --set parallel.select.mode=model --set run.dir="$tmp/mixed_model"
export TRIDENT_TEST_FLEXSP_SLOWDOWN=1:20
mpi 4 0 train "$tiny" "${base[@]}" "${mixed[@]}" --set checkpoint.every=6 --set run.dir="$tmp/mixed"
close "$tmp/mixed_single" "$tmp/mixed" 1e-5
python3_corrections "$tmp/mixed" 1:20
/usr/bin/python3 - "$tmp/mixed_model/metrics.jsonl" "$tmp/mixed/metrics.jsonl" \
  "$tmp/mixed/checkpoints/step_00000006/trainer_state.json" <<'PY' || fail "the corrections did not change the plans"
import json, sys
model, corrected = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
degrees = lambda r: {g[0] for mb in r["group_times"] for g in mb}
assert any(1 in degrees(r) for r in model[4:]), [r["groups"] for r in model]  # uncorrected: single ranks
first = next(k for k, r in enumerate(corrected) if r["plan_corrections"].get("1", 1) > 10)
assert all(1 not in degrees(r) for r in corrected[first:]), [r["groups"] for r in corrected]
assert [r["groups"] for r in model] != [r["groups"] for r in corrected]
state = json.load(open(sys.argv[3]))["selector"]["strategies"]["flexsp-lasp"]
ratios = {g["degree"]: g["ratio"] for g in state["corrections"]["groups"]}
assert state["corrections"]["steps_seen"] == 6 and abs(ratios[1] - 20) < 1e-9 and state["next_plan"]["groups"], state
PY
mkdir -p "$tmp/mixed_resumed/checkpoints"
cp -r "$tmp/mixed/checkpoints/step_00000006" "$tmp/mixed_resumed/checkpoints/"
mpi 4 0 train "$tiny" "${base[@]}" "${mixed[@]}" --set run.dir="$tmp/mixed_resumed"
same_steps "$tmp/mixed" "$tmp/mixed_resumed" || fail "the resumed run with corrections diverged"
unset TRIDENT_TEST_FLEXSP_SLOWDOWN
# trident plan --replay: the cost model's error per group degree, from the run's metrics
run 0 plan --replay "$tmp/flexsp"
stdout_has "FlexSP steps" "whose time carries the gradient reduction, left out where the step had others" \
  "| degree | groups | estimated ms | measured ms | error | measured / estimated |"
run 0 plan --replay "$tmp/flexsp" --json
/usr/bin/python3 -c 'import json, sys; rows = [json.loads(l) for l in open(sys.argv[1])]; assert rows and all(
    r["groups"] > 0 and r["measured_ms"] > 0 and r["ratio"] > 0 for r in rows), rows' "$tmp/out" ||
  fail "plan --replay --json is wrong"
cp "$tmp/node4.yaml" "$tmp/refit.yaml"
run 0 plan --replay "$tmp/flexsp" --refit "$tmp/refit.yaml"
stdout_has "compute scaled by"
/usr/bin/python3 - "$tmp/node4.yaml" "$tmp/refit.yaml" <<'PY' || fail "--refit did not scale the compute section"
import re, sys
def compute(path):
    text = open(path).read()
    return {k: float(re.search(k + r": *([0-9.eE+-]+)", text).group(1)) for k in ("alpha2_s_per_token", "beta1_s")}, text
(a, _), (b, text) = compute(sys.argv[1]), compute(sys.argv[2])
ratio = b["alpha2_s_per_token"] / a["alpha2_s_per_token"]
assert ratio > 0 and abs(b["beta1_s"] / a["beta1_s"] - ratio) < 1e-6 * ratio, (a, b)
assert re.search(r"fitted_from: \"?scaled by", text), text
PY
run 2 plan --replay "$tmp/flexsp" --refit "$tmp/no_such_profile.yaml"
stderr_line "trident: config error:" "--refit" "$tmp/no_such_profile.yaml"
run 2 plan "$tiny" --refit "$tmp/refit.yaml"
stderr_line "trident: config error:" "--refit FILE needs --replay RUN_DIR"
run 2 plan --replay "$tmp/single"
stderr_line "trident: config error:" "no step records group_times"
run 2 plan --replay "$tmp/nowhere"
stderr_line "trident: config error:" "$tmp/nowhere/metrics.jsonl"
mpi 3 2 train "$tiny" "${base[@]}" --set parallel.strategy=flexsp --set run.dir="$tmp/flexsp3"
config_error "parallel.strategy: 'flexsp'" "3 ranks"
mpi 2 2 train "$tiny" "${base[@]}" --set model.attention=softmax --set parallel.strategy=flexsp \
  --set parallel.flexsp.inner=lasp --set run.dir="$tmp/flexsp_lasp_softmax"
config_error "parallel.flexsp.inner: 'lasp'" "model.attention is 'softmax'"

# Mode measured without a profile: one is measured at start-up (and written to the run directory), the measured step
# times correct the estimates, and the corrections are kept in every checkpoint.
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" --set run.dir="$tmp/measured"
grep -q "measured this run's profile at start-up" "$tmp/measured/trident.log" || fail "no start-up profile logged"
/usr/bin/python3 - "$tmp/single/metrics.jsonl" "$tmp/measured/metrics.jsonl" \
  "$tmp/measured/checkpoints/step_00000012/trainer_state.json" <<'PY' || fail "the measured run is wrong"
import json, sys
single = [json.loads(l)["loss"] for l in open(sys.argv[1])]
runs = [json.loads(l) for l in open(sys.argv[2])]
assert len(runs) == 12 and all(abs(a - r["loss"]) <= 1e-5 * a for a, r in zip(single, runs)), (single, runs)
assert all(r["estimate_ms"] > 0 and r["predicted_ms"] > 0 for r in runs)
corrections = json.load(open(sys.argv[3]))["selector"]["corrections"]
shapes = [s for c in corrections.values() for s in c["by_longest"].values()]
assert shapes and all(s["ratio"] > 0 and s["steps"] >= 1 for s in shapes), corrections
PY
[[ -s "$tmp/measured/profile.yaml" ]] || fail "the measured profile was not written"
# the lengths halve from the 104 tokens a rank holds down to 16: 104, 52, 26
grep -q 'fitted_from: "start-up: forward+backward of one document of 26..104 tokens (3 lengths), 4 rank(s)"' \
  "$tmp/measured/profile.yaml" || fail "the start-up profile did not time the halving lengths"
# ... and that profile serves a later run's mode model
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" --set train.steps=4 --set train.eval_every=0 \
  --set parallel.select.mode=model --set parallel.select.profile="$tmp/measured/profile.yaml" --set run.dir="$tmp/again"

# trident plan: the candidates of each batch on the described node, and the one auto runs.
run 0 plan "$tiny" "${base[@]}" "${small[@]}" --cluster "$tmp/node4.yaml" --batches 3
stdout_has "4 rank(s) (4 per node); parallel.strategy: auto, 7 candidate(s); 104 tokens a rank" "batch 2:" "-> " \
  "lasp2 sp=4" "ulysses sp=2"
run 0 plan "$tiny" "${base[@]}" "${small[@]}" "${model[@]}" --batches 2 --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "the JSON plan is wrong"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 2
for b in lines:
    feasible = [c for c in b["candidates"] if "infeasible" not in c]
    best = min(feasible, key=lambda c: c["time_s"])
    assert b["chosen"] == (best["strategy"] if best["degree"] == 1 else f'{best["strategy"]} sp={best["degree"]}')
    assert all(c["peak_bytes"] > 0 and c["compute_s"] > 0 for c in feasible)
PY

# Bad input: one line naming the key or file, exit 2, before any step (no metrics written).
run 2 plan "$tiny" "${base[@]}" --batches 1
stderr_line "trident: config error:" "--cluster FILE or parallel.select.profile"

mpi 2 2 train "$tiny" "${base[@]}" "${small[@]}" --set run.dir="$tmp/bad1"
config_error "model.max_seq_len = 256" "largest group" "(2 rank(s))" \
  "activation capacity of 104 tokens" "device.memory_gb"
[[ -e "$tmp/bad1/metrics.jsonl" ]] && fail "a refused run wrote metrics"
mpi 4 2 train "$tiny" "${base[@]}" --set parallel.select.profile="$tmp/missing.yaml" --set run.dir="$tmp/bad2"
config_error "$tmp/missing.yaml"
mpi 2 2 train "$tiny" "${base[@]}" "${model[@]}" --set run.dir="$tmp/bad3"
config_error "$tmp/node4.yaml" "1 node(s) x 4 device(s)" "2 rank(s)"
mpi 4 2 train "$tiny" "${base[@]}" --set parallel.select.mode=model --set run.dir="$tmp/bad4"
config_error "parallel.select.mode: model" "parallel.select.profile"
printf 'cluster: {name: x, nodes: 1, devices_per_node: 4, device_memory_gb: 1}\n' >"$tmp/no_network.yaml"
mpi 4 2 train "$tiny" "${base[@]}" --set parallel.select.profile="$tmp/no_network.yaml" --set run.dir="$tmp/bad5"
config_error "$tmp/no_network.yaml" "'network'"
mpi 4 2 train "$tiny" "${base[@]}" --set parallel.strategy=sp --set parallel.sp.method=ring --set parallel.sp.size=4 \
  --set run.dir="$tmp/bad6"
config_error "parallel.sp.method: 'ring'" "model.attention is 'linear'"
run 2 train "$tiny" "${base[@]}" --set parallel.select.mode=fastest --set run.dir="$tmp/bad7"
config_error "parallel.select.mode" "measured" "model"
for d in bad1 bad2 bad3 bad4 bad5 bad6 bad7; do [[ -e "$tmp/$d/metrics.jsonl" ]] && fail "$d wrote metrics"; done

echo "all $checks checks passed"
