#!/usr/bin/env bash
# interrupt.sh LAPC-RUN MODEL RUNDIR SIGNAL: starts a 300-step training run, waits for
# its first checkpoint, sends SIGNAL, and reports how the run ended and
# the newest checkpoint left behind.
set -u
tool=$1 model=$2 run=$3 signal=$4
. "$(dirname "$0")/background_run.sh"
start_run "$tool" "$model" "$run" "$run.log"
kill "-$signal" "$pid"
wait "$pid"
echo "exit $?"
ls "$run/checkpoints" | grep -v '^\.' | tail -1
grep -o 'interrupted at step [0-9]*: checkpoint written, exiting' "$run.log" || true
