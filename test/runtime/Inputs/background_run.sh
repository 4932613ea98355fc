# background_run.sh, sourced: start_run LAPC-RUN MODEL RUNDIR LOG starts a
# 300-step training run in the background (its pid in $pid) and returns once
# its checkpoint at step 40 exists.
start_run() {
  "$1" train "$2" --run-dir "$3" --steps 300 --checkpoint-every 20 --log-every 1 \
    --eval-every 1000 > "$4" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    [ -d "$3/checkpoints/step_000040" ] && break
    sleep 0.05
  done
}
