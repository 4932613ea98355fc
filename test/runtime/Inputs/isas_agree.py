"""isas_agree.py LAPC_RUN MODEL: runs `lapc-run check MODEL` with the kernels
at every instruction set this CPU has (LAP_CPU_ISA) and fails unless the
losses and every gradient's norm agree with the first one's to 1e-5
(relative; the sums run in other orders). Needs two at least: every
x86-64-v3 CPU has avx2 and generic."""
import os
import re
import subprocess
import sys

lapc_run, model = sys.argv[1], sys.argv[2]
runs = {}
for isa in ["avx512", "avx2", "generic"]:
    env = dict(os.environ, LAP_CPU_ISA=isa)
    p = subprocess.run([lapc_run, "check", model, "--seed", "3"], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        if f"LAP_CPU_ISA={isa}" in p.stdout + p.stderr:
            print(f"{isa}: not on this CPU, skipped")
            continue
        sys.exit(f"{isa}: lapc-run check failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    values = {}
    for line in p.stdout.splitlines():
        if m := re.match(r"(forward|train_step)\s+loss (\S+)", line):
            values[m[1] + " loss"] = float(m[2])
        elif m := re.match(r"\s+(\S+)\s+([-+.\deEnaif]+)\s+[-+.\deEnaif]+$", line):
            values[m[1] + " gradient norm"] = float(m[2])
    if len(values) < 3:
        sys.exit(f"{isa}: no losses and gradients in:\n{p.stdout}")
    runs[isa] = values
    print(f"{isa}: {len(values)} values")
if len(runs) < 2:
    sys.exit(f"only {list(runs)} ran: nothing to compare")
first, reference = next(iter(runs.items()))
worst = 0.0
for isa, values in runs.items():
    if values.keys() != reference.keys():
        sys.exit(f"{isa} and {first} report different values")
    for key, value in values.items():
        want = reference[key]
        diff = abs(value - want) / max(abs(want), 1e-6)
        worst = max(worst, diff)
        if not diff <= 1e-5:
            sys.exit(f"{key}: {isa} {value!r}, {first} {want!r} (relative {diff:.1e})")
print(f"{', '.join(runs)} agree: largest relative difference {worst:.1e}")
