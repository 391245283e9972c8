#!/usr/bin/env bash
# The trident of the fault-tolerant build (docs/elastic.md) as a user runs it: it says which MPI it has, and a run
# that is not elastic trains under `mpirun --with-ft ulfm` as under Debian's MPI (2 ranks of data parallelism and 2
# of LASP-2), checkpoints and resumes bit for bit.
# Usage: TRIDENT=/path/to/build-ulfm/trident MPIRUN=/path/to/.deps/ompi5/bin/mpirun bash tests/app/test_ulfm.sh CONFIGS
set -u
configs=${1:?usage: TRIDENT=... MPIRUN=... bash test_ulfm.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpirun_ft=("${MPIRUN:?MPIRUN names the fault-tolerant mpirun}" --with-ft ulfm --oversubscribe)
tiny="$configs/tiny_train.yaml"
base=(--set train.steps=6 --set train.warmup_steps=2 --set train.eval_every=3 --set checkpoint.every=3)

run 0 --version
stdout_has "MPI: fault-tolerant (ULFM)"
for layout in "dp --set parallel.strategy=dp" \
              "lasp2 --set parallel.strategy=sp --set model.attention=linear --set parallel.sp.method=lasp --set parallel.lasp.variant=lasp2 --set parallel.sp.size=2"; do
  split_layout "$layout"
  checks=$((checks + 1))
  echo "check $checks: mpirun --with-ft ulfm -np 2 trident train $name"
  timeout 120 "${mpirun_ft[@]}" -np 2 "$trident" train "$tiny" "${base[@]}" "${args[@]}" --set run.dir="$tmp/$name" \
    >"$tmp/out" 2>"$tmp/err" || fail "$name did not train under the fault-tolerant MPI: $(tail -3 "$tmp/err")"
  [[ $(wc -l <"$tmp/$name/metrics.jsonl") == 6 ]] || fail "$name wrote $(wc -l <"$tmp/$name/metrics.jsonl") steps"
  mkdir -p "$tmp/${name}_resumed/checkpoints"
  cp -r "$tmp/$name/checkpoints/step_00000003" "$tmp/${name}_resumed/checkpoints/"
  timeout 120 "${mpirun_ft[@]}" -np 2 "$trident" train "$tiny" "${base[@]}" "${args[@]}" \
    --set run.dir="$tmp/${name}_resumed" >"$tmp/out" 2>"$tmp/err" || fail "$name did not resume: $(tail -3 "$tmp/err")"
  resumed_same "$tmp/$name" "$tmp/${name}_resumed" 3 5
done
echo "test_ulfm: $checks checks passed"
