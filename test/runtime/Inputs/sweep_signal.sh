#!/usr/bin/env bash
# sweep_signal.sh LAPC-RUN SPEC OUT SIGNAL: starts a sweep of long runs,
# waits for its first variant's first checkpoint, sends SIGNAL to the sweep
# alone (its variant sees nothing directly), and reports how the sweep
# ended, in how long, and whether a trainer is left running on the sweep's
# run directories.
set -u
tool=$1 spec=$2 out=$3 signal=$4
"$tool" sweep "$spec" --out "$out" --steps 1000000 > "$out.log" 2>&1 &
sweep=$!
for _ in $(seq 1200); do
  ls "$out"/runs/*/checkpoints 2>/dev/null | grep -q '^step_' && break
  sleep 0.05
done
began=$(date +%s)
kill "-$signal" "$sweep"
wait "$sweep"
echo "exit $?"
# The trainer (which gets SIGTERM when a killed sweep goes) checkpoints and
# stops within seconds.
for _ in $(seq 300); do
  pgrep -f -- "--run-dir $out/runs/" > /dev/null || break
  sleep 0.1
done
if pgrep -f -- "--run-dir $out/runs/" > /dev/null; then
  echo "a trainer is left running"
  pkill -KILL -f -- "--run-dir $out/runs/"
else
  echo "no trainer left"
fi
[ $(( $(date +%s) - began )) -le 30 ] && echo "ended within 30 s"
cat "$out"/runs/*.log | grep -o 'interrupted at step [0-9]*: checkpoint written, exiting ([A-Z]*)' || true
