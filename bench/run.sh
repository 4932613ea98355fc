#!/usr/bin/env bash
# run.sh - the training-step benchmark: lap against PyTorch, same models,
# same shapes, same head kinds, 2 threads, in one run.
#
# For gpt-bench and vit-bench (with Laplacian heads), their all-attn twins,
# gpt-bench with bf16 products, and gpt-bench and vit-bench computing in
# bf16 (the last three against PyTorch's bf16 autocast, which also runs
# attention and activations in bf16): compile with lapc, time
# lap_model_train_step (forward + backward, no optimizer) with
# lap-step-bench, once per kernel instruction set this CPU
# runs (AVX-512, AVX2), then the same model's forward + backward in
# PyTorch (Debian's python3-torch at its best: see BENCHMARKS below) once
# per instruction set too: lap's AVX2 code against PyTorch run as an
# AVX2-only CPU runs it (LAP_PEER_ISA=avx2: ATen's and OpenBLAS's AVX2
# code; not for the bf16 models, whose autocast the AVX2 peer cannot run:
# bench/peer_env.py), lap's AVX-512 against PyTorch's best. It prints one JSON
# document with both, the speed-ups per instruction set, the cost of the
# Laplacian heads over the all-attn model, the CPU and its measured peak,
# each model's per-op profile shares of lap's train_step with its GEMMs by
# shape (and, for the fp32 models, those shapes timed on each GEMM path
# and OpenBLAS's by lap-gemm-bench, operands from memory), and the peer
# against its recorded best on this kind of host (bench/peer_bests.json):
# a peer more than 15% slower than that says the host is noisy, which the
# run warns about on stderr.
#
# With OPTIMIZER (adamw or muon) both sides time a full training step
# instead: forward, backward, clipping and the optimizer's update.
#
# usage: bench/run.sh [ITERS] [OPTIMIZER]      (needs a build: scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-20}
optimizer=${2:+--optimizer $2}

# PyTorch from Debian (the peer users would pick here), at its best: with
# OpenBLAS (without it Debian's torch falls back to the reference BLAS) and
# tcmalloc (as PyTorch's own CPU launcher uses).
need=()
for p in python3-torch python3-yaml libopenblas0-pthread libtcmalloc-minimal4; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  apt-get install -y --no-install-recommends "${need[@]}" >&2
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A batch=([gpt]=8 [vit]=64)
declare -A seq=([gpt]="--seq 256" [vit]="")   # an image model's sequence is fixed

# Every kernel instruction set this CPU runs (but the generic fallback),
# each with generated code for the same level: AVX-512 kernels with code for
# this CPU, AVX2 kernels with code for x86-64-v3 (any CPU with AVX2 and FMA)
# and oneDNN kept to AVX2 (LAP_CPU_ISA does that): as an AVX2-only CPU runs.
build/bin/lapc bench/specs/vit-bench.yaml -o "$out/probe.so"
isas=$(build/bin/lapc-run info "$out/probe.so" | sed -n 's/^kernels .*this CPU runs: \([^;]*\);.*/\1/p')
targets=()
for isa in $isas; do
  case $isa in
    avx512) targets+=("avx512:native") ;;
    avx2) targets+=("avx2:x86-64-v3") ;;
  esac
done
echo "bench: kernel targets ${targets[*]}" >&2

for model in gpt-bench gpt-bench-attn gpt-bench-bf16 gpt-bench-bf16-model vit-bench vit-bench-attn \
             vit-bench-bf16-model; do
  family=${model%%-*}
  for target in "${targets[@]}"; do
    build/bin/lapc "bench/specs/$model.yaml" -o "$out/$model.${target%%:*}.so" \
      --max-batch "${batch[$family]}" --cpu "${target#*:}"
  done
  build/bin/lapc "bench/specs/$model.yaml" --emit=spec -o "$out/$model.yaml"
  # Interleave the two frameworks so that machine noise hits both.
  for round in 1 2 3; do
    for target in "${targets[@]}"; do
      isa=${target%%:*}
      LAP_CPU_ISA=$isa OMP_NUM_THREADS=2 build/bin/lap-step-bench "$out/$model.$isa.so" \
        --batch "${batch[$family]}" ${seq[$family]} --iters "$iters" $optimizer \
        > "$out/$model.lap-$isa.$round.json"
    done
    # PASSIVE: libgomp threads must not spin against torch's own threads.
    for target in "${targets[@]}"; do
      isa=${target%%:*}
      peer=$([[ $isa == avx2 ]] && echo avx2 || true)
      [[ $peer == avx2 && $model == *bf16* ]] && continue
      env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -u ATEN_CPU_CAPABILITY \
        LAP_PEER_ISA="$peer" OMP_WAIT_POLICY=PASSIVE \
        /usr/bin/python3 bench/torch_step.py --spec "$out/$model.yaml" \
        --batch "${batch[$family]}" ${seq[$family]} --threads 2 --iters "$iters" $optimizer \
        > "$out/$model.torch-$isa.$round.json"
    done
  done
  # Where lap's step goes: the per-op profile of a library built with
  # --profile (generated code and kernels; the optimizer is not in it), on
  # the first instruction set, timed apart from the runs above.
  target=${targets[0]}
  build/bin/lapc "bench/specs/$model.yaml" -o "$out/$model.profile.so" \
    --max-batch "${batch[$family]}" --cpu "${target#*:}" --profile
  LAP_CPU_ISA=${target%%:*} OMP_NUM_THREADS=2 build/bin/lap-step-bench \
    "$out/$model.profile.so" --batch "${batch[$family]}" ${seq[$family]} \
    --iters 5 > /dev/null 2> "$out/$model.profile.txt"
  # Its fp32 GEMM shapes again, alone, on each of lap's GEMM paths and
  # OpenBLAS's (bench/GemmBench.cpp), with operands from memory as in a
  # step (--cold).
  if [[ $model != *bf16* ]]; then
    LAP_CPU_ISA=${target%%:*} OMP_NUM_THREADS=2 build/bin/lap-gemm-bench \
      --profile "$out/$model.profile.txt" --cold > "$out/$model.gemm.json"
  fi
done

python3 - "$out" "${2:-none}" ${targets[@]%%:*} <<'PY'
import json, sys, glob, re
out, optimizer, isas = sys.argv[1], sys.argv[2], sys.argv[3:]
def profile(model):
    """{op: share of the profiled time} from the --profile table."""
    shares = {}
    for line in open(f"{out}/{model}.profile.txt"):
        m = re.match(r"\s+(\S+)\s+[0-9.]+\s+([0-9.]+)%\s+\d+$", line)
        if m and float(m.group(2)) > 0:
            shares[m.group(1)] = float(m.group(2)) / 100
    return shares
def gemms(model):
    """The --profile table's GEMM shapes: seconds and share of the profiled
    time, path, and GFLOP/s of the median call."""
    rows = []
    for line in open(f"{out}/{model}.profile.txt"):
        m = re.match(r"\s+([NT]{2})\s+(\S+)\s+(\d+) x (\d+) x (\d+)\s+(\d+) (\d+) (\d+)"
                     r"\s+([0-9.]+)\s+([0-9.]+)%\s+(\d+)\s+\d+\s+(\d+)$", line)
        if m:
            rows.append({"gemm": m.group(1), "path": m.group(2),
                         "mnk": [int(m.group(i)) for i in (3, 4, 5)],
                         "ld": [int(m.group(i)) for i in (6, 7, 8)],
                         "seconds": float(m.group(9)),
                         "share": float(m.group(10)) / 100, "calls": int(m.group(11)),
                         "gflops_median_call": int(m.group(12))})
    return rows
def gemm_paths(model, rows):
    """lap-gemm-bench over the profile's shapes, operands from memory: each
    path's seconds for the profile's calls over those of the paths gemm()
    chose, and (in_step) the profiled step's GEMM seconds (rows: gemms())
    over those."""
    try:
        bench = json.load(open(f"{out}/{model}.gemm.json"))
    except FileNotFoundError:
        return None
    seconds = bench["weighted_seconds"]
    ratios = {path: round(s / seconds["chosen"], 3) for path, s in seconds.items()}
    ratios["in_step"] = round(sum(g["seconds"] for g in rows) / seconds["chosen"], 3)
    return ratios
def best(model, framework):
    runs = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{model}.{framework}.*.json"))]
    return min(runs, key=lambda r: r["ms_per_step"]["median"]) if runs else None
models = ["gpt-bench", "gpt-bench-attn", "gpt-bench-bf16", "gpt-bench-bf16-model", "vit-bench",
          "vit-bench-attn", "vit-bench-bf16-model"]
results = {}
for model in models:
    torch = {isa: best(model, f"torch-{isa}") for isa in isas}
    lap = {isa: best(model, f"lap-{isa}") for isa in isas}
    rows = gemms(model)
    results[model] = {
        "lap": lap, "pytorch": torch,
        "lap_profile": {"isa": isas[0], "train_step_op_shares": profile(model),
                        "gemms": rows,
                        "gemm_seconds_over_chosen_paths": gemm_paths(model, rows)},
        # None: no peer for that instruction set (bf16 autocast on AVX2).
        "speedup_over_pytorch": {
            isa: torch[isa]["ms_per_step"]["median"] / r["ms_per_step"]["median"]
            if torch[isa] else None for isa, r in lap.items()},
    }
overhead = {
    isa: {family: results[f"{family}-bench"]["lap"][isa]["ms_per_step"]["median"]
                  / results[f"{family}-bench-attn"]["lap"][isa]["ms_per_step"]["median"] - 1
          for family in ["gpt", "vit"]}
    for isa in isas}
first = results[models[0]]["lap"]
# The peer against its recorded best on this kind of host: far slower means
# a noisy host, whose speed-ups overstate.
cpu = first[isas[0]]["cpu"]
recorded = json.load(open("bench/peer_bests.json")).get(cpu, {}).get(optimizer, {})
peer = {}
for model in models:
    for isa in isas:
        was = recorded.get(isa, {}).get(model)
        if was and results[model]["pytorch"][isa]:
            ratio = results[model]["pytorch"][isa]["ms_per_step"]["median"] / was
            peer.setdefault(isa, {})[model] = round(ratio, 3)
            if ratio > 1.15:
                print(f"bench: warning: PyTorch ({isa}) ran {model} {ratio:.2f}x slower "
                      f"than its recorded best on this host kind ({was} ms): a noisy "
                      "host; the speed-ups overstate", file=sys.stderr)
if not peer:
    print(f"bench: no recorded PyTorch best for '{cpu}' ({optimizer}) in "
          "bench/peer_bests.json: whether the host is quiet is not judged",
          file=sys.stderr)
print(json.dumps({
    "cpu": first[isas[0]]["cpu"],
    "threads": 2,
    # The host's FP32 peak with each instruction set's vectors, measured
    # by an FMA loop (best over the runs).
    "peak_gflops": {isa: max(results[m]["lap"][isa]["peak_gflops"] for m in models)
                    for isa in isas},
    "results": results,
    "laplacian_overhead": overhead,
    # PyTorch's median / its recorded best on this kind of host, per
    # instruction set and model (quiet: all within 1.15).
    "peer_vs_recorded_best": peer,
    "quiet": bool(peer) and all(r <= 1.15 for v in peer.values() for r in v.values())},
    indent=2))
PY
