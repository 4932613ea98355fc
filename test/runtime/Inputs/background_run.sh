# background_run.sh, sourced: start_run LAPC-RUN MODEL RUNDIR LOG starts a
# 300-step training run in the background (its pid in $pid) and returns once
# its first checkpoint exists (at step 20, a fraction of a second before the
# run ends: any later one may be pruned before a poll sees it).
start_run() {
  "$1" train "$2" --run-dir "$3" --steps 300 --checkpoint-every 20 --log-every 1 \
    --eval-every 1000 > "$4" 2>&1 &
  pid=$!
  for _ in $(seq 3000); do
    ls "$3/checkpoints" 2>/dev/null | grep -q '^step_' && break
    sleep 0.01
  done
}
