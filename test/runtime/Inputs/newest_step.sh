#!/usr/bin/env bash
# newest_step.sh RUNDIR N: the step of RUNDIR's newest checkpoint, plus N.
step=$(ls "$1/checkpoints" | grep -x 'step_[0-9]*' | tail -1 | sed 's/^step_0*//')
echo $(( ${step:-0} + $2 ))
