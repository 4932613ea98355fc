#!/bin/bash
# Builds here what bench/gpu/run.sh runs on a machine with a GPU, which has
# CUDA, cmake and PyTorch but no MLIR (so no lapc): the CUDA test and
# benchmark binaries, the shared libraries they need beyond glibc,
# libstdc++ and CUDA's own (oneDNN, Highway, libgomp: the CPU twins the
# tests compare with), the model libraries they load (CPU and CUDA
# libraries of the whole-model test's specs; CUDA libraries of the
# benchmark specs; a tiny language model for lapc-run to train on both)
# and the resolved specs of the PyTorch baseline.
# Writes build/gpu-prebuilt.tar.xz: carry it with the run.
#
#   bench/gpu/prepare.sh && <on the GPU machine> bench/gpu/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

# The benchmark models and the micro-batch each is timed at on the GPU.
source bench/gpu/models.sh

ninja -C build lapc lapc-run lap-cuda-tests lap-nccl-comm-tests \
  lap-cuda-kernel-tests lap-cuda-model-tests \
  lap-cuda-train-device-tests lap-gpu-step-bench lap-gpu-attention-bench \
  LapDeviceCUDA LapDeviceNCCL >/dev/null
out=build/gpu-prebuilt
rm -rf "$out" && mkdir -p "$out"/{bin,lib,models,specs,train}
cp build/bin/{lapc-run,lap-cuda-tests,lap-nccl-comm-tests} \
  build/bin/{lap-cuda-kernel-tests,lap-cuda-model-tests} \
  build/bin/{lap-cuda-train-device-tests,lap-gpu-step-bench} \
  build/bin/lap-gpu-attention-bench "$out/bin/"
# lapc-run's GPU plugins, where it looks: ../lib beside bin/.
cp build/lib/libLapDeviceCUDA.so build/lib/libLapDeviceNCCL.so "$out/lib/"

# The whole-model test's libraries, built by the test itself.
LAP_PREBUILT_MODELS="$PWD/$out/models" build/bin/lap-cuda-model-tests \
  --gtest_filter='*Build*' >/dev/null

for entry in "${GPU_BENCH_MODELS[@]/#/bench/specs/}" \
  "${GPU_PAPER_MODELS[@]}"; do
  read -r spec batch _ <<<"$entry"
  name=$(basename "$spec")
  build/bin/lapc "$spec.yaml" --target=cuda --max-batch "$batch" \
    -o "$out/models/$name.cuda.so"
  build/bin/lapc "$spec.yaml" --emit=spec >"$out/specs/$name.yaml"
done

# lapc-run trains the same tiny models on the CPU and the GPU: a language
# model on the test corpus, and DINO on Fashion-MNIST's test split (Debian's
# dataset-fashion-mnist; training and evaluation on the same 10,000 images,
# to carry 4 MB instead of 30).
fmnist=/usr/share/datasets/fashion-mnist
mkdir -p "$out/train/fmnist"
cp "$fmnist"/t10k-*.gz "$out/train/fmnist/"
sed -e "s#$fmnist/train#fmnist/t10k#; s#$fmnist/t10k#fmnist/t10k#" \
  test/runtime/Inputs/tiny_dino.yaml >"$out/train/tiny_dino.yaml"
for target in cpu cuda; do
  flags=--target=$target
  if [[ $target = cpu ]]; then flags+=" --cpu=x86-64-v3"; fi
  build/bin/lapc test/runtime/Inputs/tiny_lm.yaml $flags \
    -o "$out/models/tiny_lm.$target.so"
  build/bin/lapc "$out/train/tiny_dino.yaml" $flags \
    -o "$out/models/tiny_dino.$target.so"
done
cp test/runtime/Inputs/corpus.txt "$out/train/"

# Every library the binaries and models load that a CUDA image may lack,
# the CUDA runtime included (small); not the driver, cuBLAS or NCCL, which
# the GPU machine has (run.sh also looks in PyTorch's wheels).
for file in "$out"/bin/* "$out"/lib/libLap*.so "$out"/models/*.so; do
  ldd "$file" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E \
  '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done

strip "$out"/bin/*
XZ_OPT=-T0 tar -C build -cJf build/gpu-prebuilt.tar.xz gpu-prebuilt
# It travels with the repository, 64 MiB in all.
size=$(stat -c %s build/gpu-prebuilt.tar.xz)
if ((size > 58 << 20)); then
  echo "prepare.sh: build/gpu-prebuilt.tar.xz is $((size >> 20)) MiB, over" \
    "the 58 MiB that can travel with the repository" >&2
  exit 1
fi
ls -l build/gpu-prebuilt.tar.xz
