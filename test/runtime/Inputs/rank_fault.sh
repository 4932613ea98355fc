#!/usr/bin/env bash
# rank_fault.sh MPIRUN LAPC-RUN MODEL RUNDIR ACTION: starts a 300000-step run as
# two ranks, waits for its first checkpoint, then
#   kill-rank: SIGKILLs rank 1;     stop-rank: SIGSTOPs rank 1 (it hangs);
#   INT, USR2: sends that signal to mpirun (Ctrl-C, a scheduler's notice);
# and reports how the job ended, in how long, and the newest checkpoint.
# Few log lines (a checkpoint every 1000 steps of thousands a second):
# after Ctrl-C mpirun stops reading the ranks' output, and a rank that
# writes a line then may not live to write its checkpoint. The run is long
# enough that a signal mpirun forwards late (seconds, on a loaded machine)
# still finds it under way.
set -u
mpirun=$1 tool=$2 model=$3 run=$4 action=$5
timeout=120
[ "$action" = stop-rank ] && timeout=5
$mpirun -np 2 "$tool" train "$model" --run-dir "$run" --steps 300000 \
  --checkpoint-every 1000 --log-every 100000 --eval-every 100000 \
  --comm-timeout $timeout > "$run.log" 2>&1 &
launcher=$!
# Until the first checkpoint: the run is under way (a later one may be
# pruned before a poll sees it: this model trains thousands of steps a
# second).
for _ in $(seq 1200); do
  ls "$run/checkpoints" 2>/dev/null | grep -q '^step_' && break
  sleep 0.05
done
rank1=
for process in $(pgrep -f -- "--run-dir $run "); do
  tr '\0' '\n' < "/proc/$process/environ" 2>/dev/null |
    grep -qx 'OMPI_COMM_WORLD_RANK=1' && rank1=$process
done
[ -n "$rank1" ] || { echo "rank 1 not found"; kill "$launcher"; exit 1; }
case $action in
  kill-rank) kill -KILL "$rank1" ;;
  stop-rank) kill -STOP "$rank1" ;;
  *) kill "-$action" "$launcher" ;;
esac
began=$(date +%s)
wait "$launcher"
status=$?
elapsed=$(( $(date +%s) - began ))
echo "exit $status"
[ "$elapsed" -le 30 ] && echo "ended within 30 s" || echo "ended after $elapsed s"
ls "$run/checkpoints" | grep -v '^\.' | tail -1
