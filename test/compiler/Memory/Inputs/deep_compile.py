"""deep_compile.py LAPC LAYERS STAGE BOUND_MIB: compiles a GPT of LAYERS
layers (width 32, one Laplacian head of two) with lapc --emit=STAGE and fails
unless it succeeds within BOUND_MIB of peak resident memory."""
import os
import subprocess
import sys
import tempfile

lapc, layers, stage, bound = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
with tempfile.TemporaryDirectory() as tmp:
    spec = os.path.join(tmp, "deep.yaml")
    with open(spec, "w") as f:
        f.write(f"name: deep\nmodel:\n  family: gpt\n  layers: {layers}\n  width: 32\n"
                "  heads: 2\n  vocab: 256\n  context: 16\nattention:\n  laplacian_heads: 1\n")
    child = subprocess.Popen([lapc, spec, f"--emit={stage}", "-o", os.devnull])
    _, status, usage = os.wait4(child.pid, 0)
peak = usage.ru_maxrss / 1024
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"lapc failed on {layers} layers ({status})")
if peak > bound:
    sys.exit(f"{layers} layers to --emit={stage}: peak {peak:.0f} MiB, above {bound:.0f} MiB")
print(f"{layers} layers to --emit={stage} within {bound:.0f} MiB")
