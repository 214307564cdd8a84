#!/usr/bin/env bash
# Signals, KNN_MPI_TIMEOUT_S, and the screen and exit codes under mpirun:
#   test_signals_mpi.sh KNNBENCH SOURCE_DIR   (the test binary, with t4, is beside it: tests/knnbench-testbin)
# 1. KNN_MPI_TIMEOUT_S that is not a number of seconds in (0, 86400] exits 2 naming the variable and
#    the value, before anything runs (no results file); good values run.
# 2. SIGINT says "interrupted (SIGINT, Ctrl-C) ... Ctrl-C again to quit now" and exits 130; SIGTERM
#    says "terminated (SIGTERM)", the grace period and that a second signal quits, never "Ctrl-C
#    again", and exits 143; a second SIGTERM exits 143 at once.
# Under mpirun (skipped, exit 77 after the checks above, without mpirun or an MPI build):
# 3. The ranks' output written to a file holds no escape (colour, line erase) and no carriage return
#    (progress line), although Open MPI gives each rank a pseudo-terminal; FORCE_COLOR=1 brings the
#    colour back and NO_COLOR wins over it.
# 4. A signal to one rank only: every rank exits 128 + the signal, so mpirun exits 143 (SIGTERM to
#    rank 1, rank 0 naming rank 1) or 130 (SIGINT to rank 0); a bad KNN_MPI_TIMEOUT_S exits 2.
#    SIGTERM to mpirun itself: Open MPI 4 forwards SIGTERM to the ranks, which say "terminated
#    (SIGTERM)", and mpirun exits 1 of its own (docs: robustness); the finished result is in the
#    journal.
set -uo pipefail
bin=$1
testbin=$(dirname "$bin")/tests/knnbench-testbin
[ -x "$testbin" ] || { echo "skipped: no $testbin (t4, the slow test version)"; exit 77; }
work=$(mktemp -d)
cleanup() {
  for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
export OMP_NUM_THREADS=1
# In a sanitizer build, Open MPI's own allocations that live until exit read as leaks (LeakSanitizer
# then changes the exit code): not what this test checks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
unset NO_COLOR FORCE_COLOR KNN_MPI_TIMEOUT_S
fail() { echo "FAIL: $*"; exit 1; }
has() { grep -qF -- "$2" "$1" || { cat "$1"; fail "'$2' not in $1"; }; }
hasnt() { if grep -qF -- "$2" "$1"; then cat "$1"; fail "'$2' in $1"; fi; }
# wait_booked RESULTS N: until the run's journal holds its header and N results (60 s at most).
wait_booked() {
  for _ in $(seq 600); do
    [ -f "$1.journal" ] && [ "$(wc -l <"$1.journal")" -ge $(($2 + 1)) ] && return 0
    sleep 0.1
  done
  fail "no $2 results booked in $1.journal within 60 s"
}
tiny=(--version v0 --m 4 --n 9 --k 2 --topk 1 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 --max-noise 0 --quiet)
# t4 sleeps 3 s a call: the case runs at least 6 s.
slow=(--version t4 --m 4 --n 9 --k 2 --topk 1 --warmup 0 --min-samples 2 --max-samples 2 --min-time 0 --max-noise 0)
# One call of 3 s: under mpirun a rank that got SIGTERM waits its 10 s grace period for the others.
slow1=(--m 4 --n 9 --k 2 --topk 1 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 --max-noise 0)

# 1. KNN_MPI_TIMEOUT_S
for bad in abc -1 0 1e99 inf nan 0x10 " 5" 5s 86401 .5; do
  rm -f "$work/t.json"
  KNN_MPI_TIMEOUT_S=$bad "$bin" "${tiny[@]}" --json "$work/t.json" >"$work/t.log" 2>&1
  rc=$?
  [ $rc = 2 ] || { cat "$work/t.log"; fail "KNN_MPI_TIMEOUT_S='$bad' exited $rc, expected 2"; }
  has "$work/t.log" "KNN_MPI_TIMEOUT_S = '$bad'"
  [ ! -e "$work/t.json" ] || fail "KNN_MPI_TIMEOUT_S='$bad': a results file was written"
done
for good in "" 300 2.5 86400; do
  KNN_MPI_TIMEOUT_S=$good "$bin" "${tiny[@]}" --json "$work/g.json" >"$work/g.log" 2>&1 || { cat "$work/g.log"; fail "KNN_MPI_TIMEOUT_S='$good' refused"; }
done
echo "ok: KNN_MPI_TIMEOUT_S: bad values exit 2 naming the value; '', 300, 2.5, 86400 run"

# 2. One process: each signal's message is true of it.
signal_run() {  # signal_run NAME SIGNAL [SECOND_SIGNAL]: the exit code in $rc, the output in $work/NAME.log
  rm -f "$work/$1.json"*
  "$testbin" "${slow[@]}" --json "$work/$1.json" >"$work/$1.log" 2>&1 &
  local pid=$!
  wait_booked "$work/$1.json" 0
  sleep 0.5
  kill -"$2" $pid
  if [ $# -ge 3 ]; then sleep 0.3; kill -"$3" $pid; fi
  wait $pid
  rc=$?
}
signal_run int INT
[ $rc = 130 ] || { cat "$work/int.log"; fail "SIGINT: exit $rc, expected 130"; }
has "$work/int.log" "knnbench: interrupted (SIGINT, Ctrl-C); finishing the call in flight and saving results (Ctrl-C again to quit now)"
hasnt "$work/int.log" "SIGTERM"
signal_run term TERM
[ $rc = 143 ] || { cat "$work/term.log"; fail "SIGTERM: exit $rc, expected 143"; }
has "$work/term.log" "knnbench: terminated (SIGTERM); finishing the call in flight (a grace period of 10 s) and saving results (a second SIGTERM or Ctrl-C quits now)"
hasnt "$work/term.log" "Ctrl-C again"
hasnt "$work/term.log" "interrupted (SIGINT"
start=$SECONDS
signal_run term2 TERM TERM
[ $rc = 143 ] || { cat "$work/term2.log"; fail "second SIGTERM: exit $rc, expected 143"; }
[ $((SECONDS - start)) -lt 6 ] || fail "a second SIGTERM did not end the run at once (t4's 3 s call)"
has "$work/term2.log" "knnbench: terminated again (SIGTERM), exiting now (exit 143)"
echo "ok: SIGINT says Ctrl-C and exits 130; SIGTERM says SIGTERM, its grace period and a second signal, exits 143"

# Under mpirun
mpirun=$(command -v mpirun || command -v mpiexec) || { echo "skipped the mpirun checks: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 CUDA_VISIBLE_DEVICES=
launch=("$mpirun" --oversubscribe -np 2)
"${launch[@]}" "$bin" "${tiny[@]}" --json "$work/probe.json" >"$work/probe.log" 2>&1 || { cat "$work/probe.log"; fail "mpirun -np 2 failed"; }
if grep -q "built without MPI" "$work/probe.log"; then echo "skipped the mpirun checks: knnbench is built without MPI"; exit 77; fi

# 3. No colour, no progress line from the ranks; FORCE_COLOR=1 colours, NO_COLOR wins.
run=(--version v0,v18 --m 40 --n 300 --k 3 --topk 4 --warmup 0 --min-samples 2 --max-samples 2 --min-time 0 --max-noise 0)
timeout 120 "${launch[@]}" "$bin" "${run[@]}" --json "$work/plain.json" >"$work/plain.log" 2>&1 || { cat "$work/plain.log"; fail "mpirun run failed"; }
has "$work/plain.log" "[2/2] "  # result lines as piped output has them
if grep -q $'\033' "$work/plain.log"; then cat -v "$work/plain.log"; fail "an escape sequence in the ranks' output"; fi
if grep -q $'\r' "$work/plain.log"; then cat -v "$work/plain.log"; fail "a carriage return (progress line) in the ranks' output"; fi
FORCE_COLOR=1 timeout 120 "${launch[@]}" -x FORCE_COLOR "$bin" "${run[@]}" --json "$work/forced.json" >"$work/forced.log" 2>&1 || fail "forced run failed"
grep -q $'\033\\[1;32m' "$work/forced.log" || { cat -v "$work/forced.log"; fail "FORCE_COLOR=1: no green fastest cell"; }
if grep -q $'\r' "$work/forced.log"; then fail "FORCE_COLOR=1 brought a progress line"; fi
NO_COLOR=1 FORCE_COLOR=1 timeout 120 "${launch[@]}" -x FORCE_COLOR -x NO_COLOR "$bin" "${run[@]}" --json "$work/no.json" >"$work/no.log" 2>&1 || fail "NO_COLOR run failed"
if grep -q $'\033' "$work/no.log"; then fail "NO_COLOR=1 FORCE_COLOR=1: colour"; fi
echo "ok: under mpirun, output to a file has no colour and no progress line; FORCE_COLOR=1 colours, NO_COLOR wins"

# 4. Exit codes under mpirun.
KNN_MPI_TIMEOUT_S=abc timeout 60 "${launch[@]}" -x KNN_MPI_TIMEOUT_S "$bin" "${tiny[@]}" --json "$work/bad.json" >"$work/bad.log" 2>&1
rc=$?
[ $rc = 2 ] || { cat "$work/bad.log"; fail "mpirun with KNN_MPI_TIMEOUT_S=abc exited $rc, expected 2"; }
has "$work/bad.log" "KNN_MPI_TIMEOUT_S = 'abc'"

rank_pid() {  # rank_pid MPIRUN_PID RANK
  local p
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$p"; return 0; }
  done
  return 1
}
mpi_signal_run() {  # mpi_signal_run NAME TARGET(mpirun|RANK) SIGNAL [VERSIONS BOOKED]: exit code in $rc
  rm -f "$work/$1.json"*
  timeout 120 "${launch[@]}" "$testbin" "${slow1[@]}" --version "${4:-t4}" --json "$work/$1.json" >"$work/$1.log" 2>&1 &
  local mp=$!
  wait_booked "$work/$1.json" "${5:-0}"
  sleep 0.5
  local target
  target=$(pgrep -P $mp) || fail "$1: no mpirun under timeout"
  [ "$2" = mpirun ] || target=$(rank_pid "$target" "$2") || fail "$1: no rank $2 under mpirun"
  kill -"$3" "$target"
  wait $mp
  rc=$?
}
mpi_signal_run rank1term 1 TERM
[ $rc = 143 ] || { cat "$work/rank1term.log"; fail "SIGTERM to rank 1: mpirun exited $rc, expected 143"; }
has "$work/rank1term.log" "knnbench (rank 1): terminated (SIGTERM)"
has "$work/rank1term.log" "knnbench: rank 1 received SIGTERM: the run stopped early, finished results are saved (exit 143)"
mpi_signal_run rank0int 0 INT
[ $rc = 130 ] || { cat "$work/rank0int.log"; fail "SIGINT to rank 0: mpirun exited $rc, expected 130"; }
has "$work/rank0int.log" "knnbench (rank 0): interrupted (SIGINT, Ctrl-C)"
echo "ok: a signal to one rank: mpirun exits 143 (SIGTERM to rank 1) and 130 (SIGINT to rank 0)"
# v0 finishes, then SIGTERM to mpirun during t4's call: mpirun's exit code is its own; v0's result
# stays in the journal.
mpi_signal_run mpirunterm mpirun TERM v0,t4 1
has "$work/mpirunterm.log" "terminated (SIGTERM); finishing the call in flight (a grace period of 10 s; mpirun may end the job sooner)"
hasnt "$work/mpirunterm.log" "Ctrl-C again"
grep -q '"version": *"v0"' "$work/mpirunterm.json.journal" || { cat "$work/mpirunterm.json.journal"; fail "v0's result is not in the journal"; }
echo "ok: SIGTERM to mpirun: the ranks say SIGTERM, v0's result is in the journal; mpirun exited $rc (its own code: 1 for Open MPI 4)"
