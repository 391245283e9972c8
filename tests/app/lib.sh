# Shared by the CLI tests: run the real trident binary, check exit codes and messages.
# The caller sets TRIDENT (the binary) before sourcing this file. Prints each check; exits 1 at the first failure,
# showing the command's output.
trident=${TRIDENT:?set TRIDENT to the trident binary}
python=${PYTHON:-/usr/bin/python3}  # for JSON: any python3 (the GPU kit runs where /usr/bin/python3 may lack)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fail() {
  echo "FAIL: $*"
  echo "--- stdout:"; cat "$tmp/out"
  echo "--- stderr:"; cat "$tmp/err"
  exit 1
}

# run CODE ARGS...: runs trident ARGS and checks its exit code; output goes to $tmp/out and $tmp/err.
run() {
  local expected=$1
  shift
  checks=$((checks + 1))
  echo "check $checks: trident $* -> exit $expected"
  "$trident" "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  [[ $code == "$expected" ]] || fail "exit code $code, expected $expected"
}

# stdout_has TEXT...: stdout contains each TEXT.
stdout_has() {
  local text
  for text in "$@"; do grep -qF -- "$text" "$tmp/out" || fail "stdout lacks '$text'"; done
}

# stderr_line PREFIX TEXT...: stderr is exactly one line, starting with PREFIX and containing each TEXT.
stderr_line() {
  local prefix=$1 text
  shift
  [[ $(wc -l <"$tmp/err") == 1 ]] || fail "stderr is not exactly one line"
  [[ $(head -n 1 "$tmp/err") == "$prefix"* ]] || fail "stderr does not start with '$prefix'"
  for text in "$@"; do grep -qF -- "$text" "$tmp/err" || fail "stderr lacks '$text'"; done
}


# last_stderr_line PREFIX TEXT...: the last stderr line (a command that logged before failing) starts with PREFIX
# and contains each TEXT.
last_stderr_line() {
  local prefix=$1 text last
  shift
  last=$(tail -n 1 "$tmp/err")
  [[ $last == "$prefix"* ]] || fail "last stderr line does not start with '$prefix'"
  for text in "$@"; do [[ $last == *"$text"* ]] || fail "last stderr line lacks '$text'"; done
}

# ---- under mpirun (oversubscribed, as root) -------------------------------------------------------------------
# mpirun_env: what mpirun needs here: root allowed, more ranks than cores, one thread per rank, no CMA (the
# seccomp profile of unprivileged containers blocks it).
mpirun_env() {
  export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
}

# mpi NRANKS CODE ARGS...: `mpirun -np NRANKS trident ARGS` with the exit code checked (at most MPI_TIMEOUT
# seconds, default 120).
mpi() {
  local n=$1 expected=$2
  shift 2
  checks=$((checks + 1))
  echo "check $checks: mpirun -np $n trident $* -> exit $expected"
  timeout "${MPI_TIMEOUT:-120}" mpirun -np "$n" "$trident" "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  [[ $code == "$expected" ]] || fail "exit code $code, expected $expected"
}

# close A B TOL: two runs' losses agree step by step within relative TOL.
close() {
  "$python" - "$1/metrics.jsonl" "$2/metrics.jsonl" "$3" <<'PY' || fail "losses of $1 and $2 differ beyond $3"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:3])
assert len(a) == len(b), (len(a), len(b))
bad = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if abs(x - y) > float(sys.argv[3]) * abs(x)]
assert not bad, bad
PY
}

# same_run A B: run B trained run A's losses (and evaluation losses) and final weights bit for bit.
same_run() {
  "$python" - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PY' || fail "the losses of $1 and $2 differ"
import json, sys
a, b = ([(r["loss"], r.get("eval_loss")) for r in map(json.loads, open(p))] for p in sys.argv[1:3])
assert a == b, (a, b)
PY
  cmp -s "$1/model_final.safetensors" "$2/model_final.safetensors" || fail "$2's final weights differ from $1's"
}

# capacity RUN_DIR: the activation tokens a rank holds, from the run's start-up log.
capacity() { sed -n 's/.*activations: \([0-9]*\) tokens per rank.*/\1/p' "$1/trident.log" | head -n 1; }

# split_layout "NAME ARG...": a layout line of the tests' lists, into $name and the array $args.
split_layout() {
  name=${1%% *}
  read -ra args <<<"${1#* }"
}

# node4_profile FILE: a cluster profile of one node of four devices, for runs whose plans must be a pure function of
# the batch (parallel.select.mode: model) and for `trident plan`.
node4_profile() {
  cat >"$1" <<'YAML'
cluster: {name: one node of four, nodes: 1, devices_per_node: 4, device_memory_gb: 1}
network:
  intra_node: {bandwidth_gb_per_s: 1.0, latency_us: 20}
  inter_node: {bandwidth_gb_per_s: 1.0, latency_us: 20}
compute: {alpha1_s_per_token2: 1.0e-9, alpha2_s_per_token: 2.0e-5, beta1_s: 0.0005}
YAML
}

# resumed_same STRAIGHT RESUMED FIRST LAST: the run resumed into RESUMED trained steps FIRST .. LAST, each with
# STRAIGHT's loss bit for bit.
resumed_same() {
  grep -q "resuming from" "$2/trident.log" || fail "$2 did not resume"
  "$python" - "$1/metrics.jsonl" "$2/metrics.jsonl" "$3" "$4" <<'PY' || fail "the run resumed in $2 diverged from $1"
import json, sys
a = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1]))}
b = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2]))}
steps = list(range(int(sys.argv[3]), int(sys.argv[4]) + 1))
assert sorted(b) == steps and all(a[s] == b[s] for s in b), [(s, a.get(s), b[s]) for s in b]
PY
}
