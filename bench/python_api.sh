#!/bin/bash
# bench/python_api.py on the GPU machine, from a wheel built here (the machine has no network,
# and no libtiff: the libraries the package needs travel beside it, as scripts/gpu-check does).
#
#   bench/python_api.sh pack   (here) builds the wheel with CUDA for sm_90 in build-pygpu/ (pip
#                              wheel through build-py/venv, which scripts/run-tests makes), unpacks
#                              it into build-pygpu/site/, copies the non-system libraries its .so
#                              files need into build-pygpu/bundle/, and packs both into
#                              build-pygpu/carry.tgz (CUDA=OFF: without CUDA, to try it here)
#   bench/python_api.sh run    (there, the device tool's command with carry ["build-pygpu/carry.tgz"])
#                              unpacks, runs bench/python_api.py "$OUT" and the GPU tests of
#                              python/tests (when pytest is there), with the package on PYTHONPATH
#                              and the bundle on LD_LIBRARY_PATH (PYTHON: the interpreter, python3)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/build-pygpu

is_system_lib() {   # as scripts/gpu-check: glibc, the driver, the C++ runtime, Open MPI
    case $1 in
        linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|\
        libutil.so*|libstdc++.so*|libgcc_s.so*|libcuda.so*|libnvidia*|libpython*|\
        libmpi.so*|libopen-rte.so*|libopen-pal.so*|libpmix.so*) return 0 ;;
    esac
    return 1
}

pack() {
    local venv=$root/build-py/venv wheel lib base
    [ -x "$venv/bin/pip" ] || { echo "no $venv: run scripts/run-tests (or make it as it does) first" >&2; return 1; }
    rm -rf "$dir/wheel" "$dir/site" "$dir/bundle"
    (cd "$root" && CMAKE_GENERATOR="Unix Makefiles" "$venv/bin/pip" wheel -v --no-build-isolation --no-deps \
        --config-settings=build-dir=build-pygpu/build --config-settings=cmake.define.IMGPIPE_CUDA="${CUDA:-ON}" \
        --config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES=90 -w "$dir/wheel" . >"$dir.log" 2>&1) ||
        { tail -n 30 "$dir.log"; return 1; }
    wheel=$(ls "$dir"/wheel/imgpipe-*.whl) || return 1
    mkdir -p "$dir/site" "$dir/bundle"
    "$venv/bin/python" -m zipfile -e "$wheel" "$dir/site" || return 1
    find "$dir/site" -name '*.so*' -exec env LD_LIBRARY_PATH="$dir/site/imgpipe" ldd {} \; |
        awk '/ => \// { print $3 }' | sort -u | while read -r lib; do
            base=$(basename "$lib")
            is_system_lib "$base" || [ "$(dirname "$lib")" = "$dir/site/imgpipe" ] || cp -L "$lib" "$dir/bundle/"
        done
    # pytest for the GPU tests there (the GPU machine has none and no network): pure-Python wheels
    rm -rf "$dir/testsite" && mkdir -p "$dir/testsite" "$dir/testwheels"
    "$venv/bin/pip" download -q --no-deps --only-binary=:all: -d "$dir/testwheels" pytest pluggy iniconfig packaging \
        >>"$dir.log" 2>&1 || { echo "cannot download pytest's wheels" >&2; return 1; }
    for w in "$dir"/testwheels/*.whl; do "$venv/bin/python" -m zipfile -e "$w" "$dir/testsite" || return 1; done
    tar -C "$dir" -czf "$dir/carry.tgz" site bundle testsite || return 1
    echo "bench/python_api.sh pack: $(basename "$wheel"), bundle: $(ls "$dir/bundle" | tr '\n' ' ')"
    echo "carry: build-pygpu/carry.tgz, $(( $(du -b "$dir/carry.tgz" | cut -f1) / 1048576 )) MiB"
    echo "next: device run with command 'bench/python_api.sh run' and carry [\"build-pygpu/carry.tgz\"]"
}

run() {
    local status=0 py=${PYTHON:-python3}
    OUT=${OUT:-$dir/out}
    mkdir -p "$OUT"
    (cd "$dir" && rm -rf site bundle testsite && tar -xzf carry.tgz) || { echo "cannot unpack $dir/carry.tgz" >&2; return 2; }
    export PYTHONPATH="$dir/site:$dir/testsite${PYTHONPATH:+:$PYTHONPATH}" LD_LIBRARY_PATH="$dir/bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1
    "$py" -c "import imgpipe; print('imgpipe', imgpipe.version(), 'GPU:', imgpipe.gpu_available())" || return 1
    "$py" "$root/bench/python_api.py" "$OUT" || status=1
    if "$py" -c "import pytest" 2>/dev/null; then
        "$py" -m pytest -q -rs -p no:cacheprovider "$root/python/tests/test_gpu.py" 2>&1 | tee "$OUT/python-gpu-tests.txt" ||
            status=1
    else
        echo "pytest is not installed there: the GPU tests were not run"
    fi
    return $status
}

case ${1:-} in
    pack) pack ;;
    run) run ;;
    *) echo "usage: bench/python_api.sh pack|run" >&2; exit 2 ;;
esac
