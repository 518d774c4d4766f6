#!/usr/bin/env bash
# Installs Detectron2 into a Python environment that has torch, building it from source only once.
# Detectron2 publishes no wheels for current torch; its C++ ops (ROIAlign, NMS, ...) are compiled
# against the installed torch (CPU ops here; CUDA ops where torch sees a GPU and CUDA_HOME is set).
# The wheel is kept in $SSL_JAX_CACHE/wheels/detectron2-<commit>-torch<version>-<python>/, so a
# second set-up (or a fresh clone on the same machine) installs it in seconds.
# Usage: bash launch/build_detectron2.sh PYTHON SOURCE COMMIT
#   SOURCE: a pip source of that commit (git+https URL, .tar.gz archive or folder).
# Exit status 0 when `import detectron2` works afterwards, else 1 with one line saying why.
set -uo pipefail
python=$1 source=$2 commit=$3
if ! torch_version=$("$python" -c "import torch; print(torch.__version__)" 2>/dev/null); then
  echo "detectron2 not installed: it is built against torch, and torch is not installed"
  exit 1
fi
if "$python" -c "import detectron2, detectron2._C" 2>/dev/null; then exit 0; fi
py_tag=$("$python" -c "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')")
cache="${SSL_JAX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ssl_jax}/wheels/detectron2-$commit-torch$torch_version-$py_tag"
wheel=$(ls "$cache"/detectron2-*.whl 2>/dev/null | head -n 1)
if [ -z "$wheel" ]; then
  case $source in
    git+*|http*|/*) ;;
    *) source=$(cd "$(dirname "$source")" 2>/dev/null && pwd)/$(basename "$source") ;;
  esac
  echo "building detectron2 $commit from $source against torch $torch_version" \
    "(once; about 2 min on 2 cores, cached in $cache)"
  build=$(mktemp -d)
  start=$(date +%s)
  if ! MAX_JOBS=${MAX_JOBS:-$(nproc)} "$python" -m pip wheel -q --no-deps --no-build-isolation \
      -w "$build" "$source" >"$build/log" 2>&1; then
    echo "detectron2 not installed: its build from $source failed (last lines of the log follow;" \
      "the detection fine-tune and its tests need it)"
    tail -n 5 "$build/log"
    rm -rf "$build"
    exit 1
  fi
  mkdir -p "$cache"
  mv "$build"/detectron2-*.whl "$cache"/
  rm -rf "$build"
  wheel=$(ls "$cache"/detectron2-*.whl | head -n 1)
  echo "built $(basename "$wheel") in $(($(date +%s) - start)) s"
fi
if ! "$python" -m pip install -q "$wheel"; then
  echo "detectron2 not installed: pip could not install $wheel or its dependencies"
  exit 1
fi
if ! "$python" -c "import detectron2, detectron2._C" 2>/dev/null; then
  echo "detectron2 installed from $wheel but does not import (built for another torch? delete $cache)"
  exit 1
fi
