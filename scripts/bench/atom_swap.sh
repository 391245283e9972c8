#!/usr/bin/env bash
# ATOM's swaps on this machine (configs/experiments/atom/atom_swap_cpu.yaml, one CPU peer): throughput swapped /
# resident for device budgets of 1/2, 1/4 and 1/8 of the model's weights, gradients and AdamW state and for several
# tokens a pass, the copies running over an emulated host-to-device link (parallel.atom.emulate_copy_gb_per_s: the CPU's
# memcpy is far faster than PCIe). Beside each measurement, the swap planner's prediction for the same placement: a
# profile of this machine (`trident bench profile`, plus the link) given to `trident plan` and to the run. Each
# budget runs once a parallel.atom.activations mode (--activations: auto, keep, recompute, offload). Prints a
# markdown table and writes runs/bench_atom_swap/{atom_swap.md, profile.yaml, RUN/...}. About 5 minutes a mode on
# 2 cores.
# Usage: bash scripts/bench/atom_swap.sh [--steps 6] [--link-gb-per-s 1.0] [--tokens "256 1024 2048"]
#        [--budgets "2 4 8"] [--activations "recompute offload"]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "bench/atom_swap.sh: $*" >&2; exit 2; }
steps=6 link_gb_per_s=1.0 tokens="256 1024 2048" budgets="2 4 8" activations="recompute offload"
source scripts/bench/lib.sh
bench_options steps:count link-gb-per-s:number tokens:words budgets:words activations:words -- "$@"
((steps >= 2)) || die "--steps: '$steps' is below 2 (the first step is not measured)"
for t in $tokens; do  # a batch holds at least one whole document of the config's model.max_seq_len (256)
  [[ $t =~ ^[1-9][0-9]*$ && $t -ge 256 ]] || die "--tokens: '$t' is not a whole number >= 256 (model.max_seq_len)"
done
for k in $budgets; do [[ $k =~ ^[1-9][0-9]*$ ]] || die "--budgets: '$k' is not a positive whole number"; done
for a in $activations; do
  [[ $a =~ ^(auto|keep|recompute|offload)$ ]] || die "--activations: '$a' is not one of auto, keep, recompute, offload"
done
trident=$(bench_trident) || exit 2
out=$(bench_out runs/bench_atom_swap)
config=$(realpath configs/experiments/atom/atom_swap_cpu.yaml)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# The profile: this machine's compute fit for the model, one device, and the emulated link both ways.
cat >"$out/profile.yaml" <<YAML
cluster: {name: this-cpu, nodes: 1, devices_per_node: 1, device_memory_gb: 0}
network:
  intra_node: {bandwidth_gb_per_s: 10, latency_us: 1}
  inter_node: {bandwidth_gb_per_s: 10, latency_us: 1}
  host_to_device: {bandwidth_gb_per_s: $link_gb_per_s, latency_us: 0}
  device_to_host: {bandwidth_gb_per_s: $link_gb_per_s, latency_us: 0}
YAML
"$trident" bench profile "$config" --out "$out/profile.yaml" >"$out/profile.log" 2>&1 \
  || die "trident bench profile failed (see $out/profile.log)"
common=(--set train.steps="$steps" --set parallel.atom.emulate_copy_gb_per_s="$link_gb_per_s"
        --set parallel.select.profile="$out/profile.yaml")

# 16 bytes a parameter: the store, and what "the model" means for the budgets
params=$("$trident" plan "$config" "${common[@]}" --json | /usr/bin/python3 -c \
  'import json, sys; print(json.load(sys.stdin)["host_store_bytes"] // 16)')
model_gib=$(/usr/bin/python3 -c "print(16 * $params / 2**30)")
echo "bench/atom_swap.sh: $params parameters, $(/usr/bin/python3 -c "print(round(16 * $params / 2**20, 1))") MiB of" \
     "weights, gradients and AdamW state; link $link_gb_per_s GB/s" >&2

for batch in $tokens; do
  name="resident_$batch"
  echo "bench/atom_swap.sh: $name" >&2
  "$trident" train "$config" "${common[@]}" --set train.batch_tokens="$batch" --set parallel.strategy=dp \
    --set run.dir="$out/$name" >"$out/$name.log" 2>&1 || die "the resident run failed (see $out/$name.log)"
  for k in $budgets; do
    gib=$(/usr/bin/python3 -c "print($model_gib / $k)")
    for mode in $activations; do
      name="swap_${mode}_${k}_$batch"
      echo "bench/atom_swap.sh: $name (device.memory_gb = $gib)" >&2
      set_budget=(--set train.batch_tokens="$batch" --set device.memory_gb="$gib"
                  --set parallel.atom.activations="$mode")
      if "$trident" plan "$config" "${common[@]}" "${set_budget[@]}" --json >"$out/$name.plan.json" \
           2>"$out/$name.plan.err" \
        && "$trident" train "$config" "${common[@]}" "${set_budget[@]}" --set run.dir="$out/$name" >"$out/$name.log" 2>&1
      then :; else echo "bench/atom_swap.sh: $name did not run (see $out/$name.plan.err, $out/$name.log)" >&2; fi
    done
  done
done

/usr/bin/python3 - "$out" "$tokens" "$budgets" "$activations" "$link_gb_per_s" <<'PY' | tee "$out/atom_swap.md"
import json, statistics, sys
from pathlib import Path
out, tokens_list, budgets, modes, link = (Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split(),
                                          sys.argv[4].split(), sys.argv[5])

def steps(name):  # the steps after the first (it allocates and warms up)
    path = out / name / "metrics.jsonl"
    return [json.loads(l) for l in path.open()][1:] if path.exists() else None

def median(records, key):
    return statistics.median(r[key] for r in records)

print(f"ATOM swaps on this CPU (configs/experiments/atom/atom_swap_cpu.yaml, emulated host-to-device link {link} "
      f"GB/s); medians over the steps after the first; predicted = the swap planner on this machine's profile "
      f"(trident plan)\n")
print("| tokens a batch | budget | activations | sub-models | recomputed | offloaded | tokens a pass | resident ms | "
      "swapped ms | swapped/resident throughput | exposed copy ms (measured) | predicted step ms | "
      "predicted exposed ms | copy ms | copy CPU ms | activation MB a step |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for tokens in tokens_list:
    resident = steps(f"resident_{tokens}")
    for k in budgets:
        for mode in modes:
            name = f"swap_{mode}_{k}_{tokens}"
            swapped = steps(name)
            if not swapped or not resident:
                print(f"| {tokens} | 1/{k} | {mode} | did not run: see {name}.plan.err, {name}.log |"
                      + " |" * 12)
                continue
            plan = json.load((out / f"{name}.plan.json").open())
            res_ms, swap_ms = median(resident, "step_ms"), median(swapped, "step_ms")
            ratio = median(swapped, "tokens_per_s") / median(resident, "tokens_per_s")
            print(f"| {tokens} | 1/{k} | {mode} | {plan['sub_models']} | {plan['recomputed_sub_models']} | "
                  f"{plan['offloaded_sub_models']} | {plan['tokens_per_pass']} | {res_ms:.0f} | {swap_ms:.0f} | "
                  f"{ratio:.2f}x | {median(swapped, 'exposed_copy_ms'):.0f} | {plan['batch_step_s'] * 1e3:.0f} | "
                  f"{plan['batch_exposed_copy_s'] * 1e3:.0f} | {median(swapped, 'copy_ms'):.0f} | "
                  f"{median(swapped, 'copy_cpu_ms'):.0f} | {median(swapped, 'activation_bytes') / 1e6:.0f} |")
PY
bench_stamp "$out/atom_swap.md"
