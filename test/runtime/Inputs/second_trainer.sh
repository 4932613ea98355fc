#!/usr/bin/env bash
# second_trainer.sh LAPC-RUN MODEL RUNDIR: starts a 300-step run, waits for
# its first checkpoint, starts a second trainer on the same run
# directory and reports how that one ended, then stops the first (SIGTERM)
# and reports that a trainer can take the directory once the first is gone.
set -u
tool=$1 model=$2 run=$3
. "$(dirname "$0")/background_run.sh"
start_run "$tool" "$model" "$run" "$run.first.log"
"$tool" train "$model" --run-dir "$run" --steps 300 --log-every 1 --eval-every 1000 --resume 2>&1 |
  sed "s/$pid/FIRST/g"
echo "second exit ${PIPESTATUS[0]}"
kill -TERM "$pid"
wait "$pid"
echo "first exit $?"
"$tool" train "$model" --run-dir "$run" --steps 300 --log-every 100 --eval-every 1000 --resume > /dev/null 2>&1
echo "after exit $?"
