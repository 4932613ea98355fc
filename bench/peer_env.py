"""The environment PyTorch runs at its best in, which torch reads when it
loads: a benchmark script calls run_at_its_best() before importing torch,
and it fixes the environment and re-executes the script once.

- OPENBLAS_CORETYPE=Haswell halves OpenBLAS's GEMMs, and spinning OpenMP
  threads fight OpenBLAS's for the cores (../shared/BENCHMARKING.md).
- LAP_PEER_ISA=avx2 runs PyTorch as an AVX2-only CPU would in fp32:
  ATen's AVX2 kernels (ATEN_CPU_CAPABILITY=avx2) and OpenBLAS's Haswell
  ones (OPENBLAS_CORETYPE=Haswell), the fair peer of lap's AVX2 code on a
  host that has AVX-512. (Not for bf16 autocast: torch 1.13 sends its bf16
  GEMMs to oneDNN by what the CPU has, and limited to AVX2 oneDNN has no
  bf16 matmul, so the step fails.) Unset, torch runs the best code this
  CPU has.
- A page fault costs ~13 us under this VM, and glibc's malloc maps every
  large tensor afresh and unmaps it on free: the 64 MiB logits alone cost
  ~0.2 s a step. PyTorch's CPU tuning advice (and its launcher,
  torch.backends.xeon.run_cpu) is a caching allocator: tcmalloc when
  installed, else glibc kept from returning memory to the kernel."""

import os
import sys

TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
CRIPPLING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# What limits torch's code to an instruction set (LAP_PEER_ISA sets it).
LIMITS = ("ATEN_CPU_CAPABILITY",)


def run_at_its_best(name):
    """Re-executes this script in PyTorch's best environment, unless it
    runs there already; `name` prefixes what it says."""
    if os.environ.get("TORCH_STEP_ENV"):
        return
    env = {k: v for k, v in os.environ.items() if k not in CRIPPLING + LIMITS}
    if os.environ.get("OMP_WAIT_POLICY") != "PASSIVE" or len(env) < len(os.environ):
        print(f"{name}: running with OMP_WAIT_POLICY=PASSIVE and without "
              f"{'/'.join(CRIPPLING + LIMITS)} (LAP_PEER_ISA=avx2 sets "
              "what an AVX2-only CPU runs)", file=sys.stderr)
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    isa = peer_isa()
    if isa == "avx2":
        env.update(ATEN_CPU_CAPABILITY="avx2", OPENBLAS_CORETYPE="Haswell")
    elif isa != "best":
        print(f"{name}: LAP_PEER_ISA={isa}: expected avx2, or nothing for "
              "the best this CPU runs", file=sys.stderr)
        sys.exit(2)
    if "malloc" not in env.get("LD_PRELOAD", "") and "GLIBC_TUNABLES" not in env:
        if os.path.exists(TCMALLOC):
            env["LD_PRELOAD"] = " ".join(filter(None, [TCMALLOC, env.get("LD_PRELOAD")]))
        else:
            env["GLIBC_TUNABLES"] = ("glibc.malloc.mmap_max=0:"
                                     "glibc.malloc.trim_threshold=68719476736")
    env["TORCH_STEP_ENV"] = "1"
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def peer_isa():
    """What LAP_PEER_ISA asks torch to run: "avx2", or "best"."""
    return os.environ.get("LAP_PEER_ISA") or "best"


def blas_library(name):
    """The BLAS that torch's GEMMs call (Debian's torch uses the system's
    libblas.so.3), once torch is loaded. Netlib's reference BLAS, which
    Debian installs when no optimized one is, runs GEMMs ~50x slower than
    OpenBLAS: refuse it (exit status 2)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line.rsplit("/", 1)[-1]}
    if any(path.endswith("/blas/libblas.so.3") or "/blas/libblas.so.3." in path for path in paths):
        print(f"{name}: torch is linked to the reference BLAS (libblas3); install an "
              "optimized one (apt-get install libopenblas0-pthread) or put its libblas.so.3 "
              "on LD_LIBRARY_PATH", file=sys.stderr)
        sys.exit(2)
    paths = {os.path.realpath(p) for p in paths}
    # Report the implementation (libopenblasp-r0.3.21.so) over its libblas.so.3 shim.
    named = sorted(p for p in paths if not os.path.basename(p).startswith("libblas.so"))
    return (named or sorted(paths) or ["unknown"])[0]


def allocator():
    """The allocator this process runs on (tcmalloc, or glibc's)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            name = line.split()[-1].rsplit("/", 1)[-1]
            if "malloc" in name:
                return name.split(".so")[0]
    tunables = os.environ.get("GLIBC_TUNABLES")
    return f"glibc ({tunables})" if tunables else "glibc"
