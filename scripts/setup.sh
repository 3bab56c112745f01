#!/usr/bin/env bash
# Set-up shared by the quick-start commands: Debian packages (installed only when
# missing) and the build. Safe to run again. Sourced by scripts/examples.sh and
# scripts/test.sh; not meant to be run alone.
set -euo pipefail

COIL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COIL_JOBS=${COIL_JOBS:-$(nproc)}

# What the build and the tests need from Debian: the toolchain, CMake and Ninja,
# GoogleTest, nlohmann-json (safetensors headers), clang with libFuzzer.
COIL_PACKAGES=(g++ cmake ninja-build libgtest-dev nlohmann-json3-dev clang libclang-rt-14-dev)

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
