#!/usr/bin/env bash
# Set-up shared by the quick-start commands: Debian packages (installed only when
# missing) and the build. Safe to run again. Sourced by scripts/examples.sh and
# scripts/test.sh; not meant to be run alone.
set -euo pipefail

COIL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COIL_JOBS=${COIL_JOBS:-$(nproc)}

# What the build and the tests need from Debian: the toolchain, CMake and Ninja,
# GoogleTest, nlohmann-json (safetensors headers), clang with libFuzzer, and oneDNN for
# the CPU's matrix products and convolutions (libdnnl loads libOpenCL.so.1 at run time).
COIL_PACKAGES=(g++ cmake ninja-build libgtest-dev nlohmann-json3-dev clang libclang-rt-14-dev libdnnl-dev
               ocl-icd-libopencl1)

coil_install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "== installing Debian packages: ${missing[*]}"
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# What the Triton tests need in coil's virtual environment .venv (where coil looks for its
# Python, option triton.python): Triton's compiler, numpy, and torch, whose tensors
# python/coil_triton/run_plan.py runs the generated kernels on (under Triton's interpreter
# on a machine without a GPU). torch from PyPI is the CUDA build, about 3 GB with its
# nvidia-* wheels; it imports without a GPU. torch 2.11.0 requires triton==3.6.0 exactly:
# change the two together.
# nanobind and scikit-build-core build coil's own package (pyproject.toml). torchvision (the
# release of torch's) and transformers build the model suite (bench/model_zoo.py) that
# tests/python/test_models.py runs at tiny sizes. expecttest is what PyTorch's OpInfo
# database (scripts/opinfo_sweep.py) imports.
COIL_PYTHON_PACKAGES=(torch==2.11.0 triton==3.6.0 numpy nanobind scikit-build-core torchvision==0.26.0
                      transformers==5.24.0 expecttest)

# coil_setup_python: creates .venv when missing and installs the packages, unless the
# .venv there already imports every one of them (then it is left alone).
coil_setup_python() {
  local venv="$COIL_ROOT/.venv"
  if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import triton, torch, nanobind, scikit_build_core, torchvision, transformers, expecttest" 2>/dev/null; then
    return 0
  fi
  echo "== setting up $venv: ${COIL_PYTHON_PACKAGES[*]}"
  if [[ ! -x "$venv/bin/python" ]]; then
    python3 -c "import ensurepip" 2>/dev/null || coil_install_packages python3-venv
    python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${COIL_PYTHON_PACKAGES[@]}"
}

# coil_install_package: installs the Python package `coil` (pyproject.toml) into .venv, its
# CMake build in ./build, the tree coil_build made: only the extension module is new.
coil_install_package() {
  echo "== installing the Python package coil into .venv"
  "$COIL_ROOT/.venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation "$COIL_ROOT"
}

# coil_build DIR [CMAKE ARGS...]: configures (once) and builds coil into DIR.
coil_build() {
  local dir=$1
  shift
  if [[ ! -f "$dir/build.ninja" ]]; then
    cmake -S "$COIL_ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  fi
  cmake --build "$dir" -j "$COIL_JOBS"
}

coil_install_packages "${COIL_PACKAGES[@]}"
