"""Reads `lapc-run check` output on stdin; fails unless the peak RSS of the
process is within a fixed allowance (code, libraries, oneDNN's and the
kernels' small scratch) of what the memory plan promised."""
import re
import sys

ALLOWANCE_MIB = 64
text = sys.stdin.read()
m = re.search(r"planned ([0-9.]+) MiB .* peak RSS ([0-9.]+) MiB", text)
if not m:
    sys.exit("no memory line in the output:\n" + text)
planned, rss = float(m.group(1)), float(m.group(2))
print(f"planned {planned} MiB, peak RSS {rss} MiB")
if rss > planned + ALLOWANCE_MIB:
    sys.exit(f"peak RSS {rss} MiB exceeds the plan {planned} MiB by more than {ALLOWANCE_MIB} MiB")
