#!/usr/bin/env bash
# interrupt.sh LAPC-RUN MODEL RUNDIR SIGNAL: starts a 300-step training run, waits for
# its checkpoint at step 40, sends SIGNAL, and reports how the run ended and
# the newest checkpoint left behind.
set -u
tool=$1 model=$2 run=$3 signal=$4
"$tool" train "$model" --run-dir "$run" --steps 300 --checkpoint-every 20 --log-every 1 \
  --eval-every 1000 > "$run.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ -d "$run/checkpoints/step_000040" ] && break
  sleep 0.05
done
kill "-$signal" "$pid"
wait "$pid"
echo "exit $?"
ls "$run/checkpoints" | grep -v '^\.' | tail -1
grep -o 'interrupted at step [0-9]*: checkpoint written, exiting' "$run.log" || true
