#!/usr/bin/env bash
# install-deps.sh - install what lap needs on Debian 12, and nothing that is already there.
#
# Idempotent: packages already installed are skipped, so a second run does no
# apt work at all. Needs root (or passwordless sudo) only when something is missing.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build ccache git pkg-config python3
  # compiler infrastructure: Debian's LLVM/MLIR 19 (lit ships in llvm-19-tools)
  clang-19 lld-19 llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libclang-rt-19-dev
  # libraries
  libyaml-cpp-dev libfmt-dev googletest libgtest-dev
  libdnnl-dev libhwy-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libpng-dev
  libseccomp-dev
  zlib1g-dev libjpeg62-turbo-dev liblapacke-dev libxxhash-dev
  # data-parallel runs: mpirun and its library
  libopenmpi-dev openmpi-bin
  # tests: runs lapc-run as on a CPU with AVX2 and no AVX-512
  qemu-user
  # Python: the lap package, its tests (pytest, PyTorch's math, pip in a venv)
  python3-numpy python3-torch python3-pytest python3-xxhash python3-venv
  python3-pip
  # data: the text and images the README's walkthroughs train on
  fortunes dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
