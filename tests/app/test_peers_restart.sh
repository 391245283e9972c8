#!/usr/bin/env bash
# scripts/cluster/atom_peers.sh: a peer killed mid-run (kill -9) ends the MPI job; the launcher restarts the survivor
# from the newest checkpoint without a person acting, and the run finishes with every step in metrics.jsonl once; a
# peer killed before the first checkpoint restarts the run from step 0 with the stopped run's metrics kept aside; a peer
# joining (SIGUSR1) restarts the job with one peer more from a checkpoint taken then; a bad input is passed through,
# not restarted; fewer peers than --min-peers is exit 3.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_peers_restart.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_peers_restart.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
launcher="$(dirname "${BASH_SOURCE[0]}")/../../scripts/cluster/atom_peers.sh"
tiny="$configs/tiny_train.yaml"
mpirun_env
peers=(--set parallel.strategy=atom --set parallel.atom.average_every=4 --set train.eval_every=0)

# start_peers NAME ARGS...: the launcher on 2 peers in the background (its pid in $launched), output in NAME.out
start_peers() {
  local name=$1
  shift
  TRIDENT=$trident bash "$launcher" --np 2 "$@" >"$tmp/$name.out" 2>&1 &
  launched=$!
}
# kill_a_peer RUN_DIR WHEN: once WHEN (a shell test) holds, kill -9 one trident rank of RUN_DIR
kill_a_peer() {
  local dir=$1 when=$2 victim
  for _ in $(seq 1 600); do eval "$when" && break; sleep 0.1; done
  eval "$when" || fail "$dir: '$when' never held"
  victim=$(pgrep -f "^$trident train .*run.dir=$dir" | sort -n | tail -n 1)  # a rank, not mpirun
  [[ -n $victim ]] || fail "$dir: no rank to kill"
  kill -9 "$victim"
}
# every_step_once RUN_DIR STEPS LAST_WORLD: metrics hold steps 0..STEPS-1 once each, the last on LAST_WORLD ranks
every_step_once() {
  /usr/bin/python3 - "$1/metrics.jsonl" "$2" "$3" <<'PY' || fail "$1: metrics after the restart are wrong"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in records] == list(range(int(sys.argv[2]))), [r["step"] for r in records]
assert records[-1]["world_size"] == int(sys.argv[3]), records[-1]
PY
}

# Killed after a checkpoint: the survivor resumes from it and finishes alone.
checks=$((checks + 1)); echo "check $checks: a peer killed after the step-40 checkpoint"
start_peers mid -- "$tiny" "${peers[@]}" --set train.steps=400 --set checkpoint.every=40 --set run.dir="$tmp/mid"
kill_a_peer "$tmp/mid" "[[ -e $tmp/mid/checkpoints/step_00000040 ]]"
wait "$launched" || fail "the launcher did not finish the run (exit $?): $(cat "$tmp/mid.out")"
grep -q "a peer died (exit 137): restarting 1 peer(s) from the newest checkpoint" "$tmp/mid.out" \
  || fail "no restart logged: $(cat "$tmp/mid.out")"
grep -q "resuming from" "$tmp/mid/trident.log" || fail "the survivor did not resume from a checkpoint"
[[ -e $tmp/mid/checkpoints/step_00000400 ]] || fail "no final checkpoint"
every_step_once "$tmp/mid" 400 1

# Killed before the first checkpoint: the run starts again from step 0; the stopped run's metrics are kept aside.
checks=$((checks + 1)); echo "check $checks: a peer killed before the first checkpoint"
start_peers early -- "$tiny" "${peers[@]}" --set train.steps=300 --set checkpoint.every=0 --set run.dir="$tmp/early"
kill_a_peer "$tmp/early" "[[ -s $tmp/early/metrics.jsonl ]]"
wait "$launched" || fail "the launcher did not finish the run (exit $?): $(cat "$tmp/early.out")"
[[ -s $tmp/early/metrics.jsonl.stopped-1 ]] || fail "the stopped run's metrics were not kept aside"
grep -q "stopped before its first checkpoint: starting again from step 0" "$tmp/early/trident.log" \
  || fail "the restart from step 0 is not logged"
every_step_once "$tmp/early" 300 1

# A peer joins (SIGUSR1 to the launcher): the job stops after its step with a checkpoint and starts again with one
# peer more, which loads the others' state from it.
checks=$((checks + 1)); echo "check $checks: a peer joins"
start_peers join --max-peers 3 -- "$tiny" "${peers[@]}" --set train.steps=400 --set checkpoint.every=100 \
  --set run.dir="$tmp/join"
for _ in $(seq 1 600); do [[ $(wc -l <"$tmp/join/metrics.jsonl" 2>/dev/null || echo 0) -ge 30 ]] && break; sleep 0.1; done
kill -USR1 "$launched"
wait "$launched" || fail "the launcher did not finish the run after a join (exit $?): $(cat "$tmp/join.out")"
grep -q "a peer joins: restarting 3 peer(s) from the newest checkpoint" "$tmp/join.out" \
  || fail "no join logged: $(cat "$tmp/join.out")"
every_step_once "$tmp/join" 400 3
/usr/bin/python3 - "$tmp/join/metrics.jsonl" <<'PY' || fail "the join did not happen mid-run"
import json, sys
worlds = [json.loads(l)["world_size"] for l in open(sys.argv[1])]
assert worlds[0] == 2 and worlds[-1] == 3 and worlds == sorted(worlds), worlds
PY

# A bad input is the run's own failure: passed through, not restarted.
checks=$((checks + 1)); echo "check $checks: a bad input is not restarted"
TRIDENT=$trident bash "$launcher" --np 2 -- "$tiny" --set run.dir="$tmp/bad" --set train.lr=-1 >"$tmp/bad.out" 2>&1
code=$?
[[ $code == 2 ]] || fail "a bad input exited $code, not 2"
grep -q "failed on its own (exit 2): not restarted" "$tmp/bad.out" || fail "$(cat "$tmp/bad.out")"
# With --min-peers 2, losing one of 2 peers ends the run: exit 3.
checks=$((checks + 1)); echo "check $checks: fewer peers than --min-peers"
start_peers floor --min-peers 2 -- "$tiny" "${peers[@]}" --set train.steps=2000 --set checkpoint.every=40 \
  --set run.dir="$tmp/floor"
kill_a_peer "$tmp/floor" "[[ -s $tmp/floor/metrics.jsonl ]]"
wait "$launched"
code=$?
[[ $code == 3 ]] || fail "below --min-peers exited $code, not 3: $(cat "$tmp/floor.out")"
run 2 train "$tiny" --set run.dir="$tmp/floor" --set train.resume=never  # its outputs are kept, never overwritten
for bad in "--np 0" "--np x" "--min-peers 0" "--max-peers 1 --np 2" "--bogus"; do
  checks=$((checks + 1))
  # shellcheck disable=SC2086
  TRIDENT=$trident bash "$launcher" $bad -- "$tiny" >"$tmp/out" 2>"$tmp/err"
  [[ $? == 2 ]] && grep -q "cluster/atom_peers.sh:" "$tmp/err" || fail "'$bad' is not a usage error"
done

echo "PASS: $checks checks"
