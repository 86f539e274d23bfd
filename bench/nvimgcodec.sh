#!/usr/bin/env bash
# nvImageCodec, NVIDIA's codec library, as a peer on the GPU machine (which has no network):
#   bench/nvimgcodec.sh pack   (here) downloads its cu13 wheel from PyPI and keeps only what a
#                              JPEG decode on Python 3.12 needs, in build-nvimg/nvimgcodec.tgz
#                              (about 5 MiB: carry it with the run)
#   bench/nvimgcodec.sh decode DIR   (there) times its hardware decoder on DIR's JPEGs with
#                              bench/nvimgcodec_decode.py (PYTHON: the interpreter, python3)
# Nothing of it is committed: the wheel is NVIDIA's.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/build-nvimg

pack() {
    local py=${PYTHON:-python3} dl=$dir/dl
    rm -rf "$dir" && mkdir -p "$dl" || return 1
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$dl" nvidia-nvimgcodec-cu13 ||
        { echo "nvimgcodec: cannot download the wheel" >&2; return 1; }
    "$py" - "$dl" "$dir/site" <<'PYEOF' || return 1
import glob, os, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/nvidia_nvimgcodec_cu13-*.whl")[0]
keep = ("nvidia/__init__.py", "nvidia/nvimgcodec/__init__.py", "nvidia/nvimgcodec/libnvimgcodec.so.0",
        "nvidia/nvimgcodec/extensions/libnvjpeg_ext.so", "nvidia/nvimgcodec/extensions/libjpeg_turbo_ext.so",
        "nvidia/nvimgcodec/nvimgcodec_impl.cpython-312-")
z = zipfile.ZipFile(wheel)
names = [n for n in z.namelist() if any(n.startswith(k) for k in keep)]
for n in names: z.extract(n, sys.argv[2])
print("nvimgcodec:", os.path.basename(wheel), len(names), "files kept")
PYEOF
    tar -C "$dir" -czf "$dir/nvimgcodec.tgz" site || return 1
    rm -rf "$dl" "$dir/site"
    echo "carry: build-nvimg/nvimgcodec.tgz, $(( $(du -b "$dir/nvimgcodec.tgz" | cut -f1) / 1048576 )) MiB"
}

decode() {
    [ -f "$dir/nvimgcodec.tgz" ] || { echo "nvimgcodec: no build-nvimg/nvimgcodec.tgz carried"; return 1; }
    (cd "$dir" && rm -rf site && tar -xzf nvimgcodec.tgz) || return 1
    PYTHONPATH="$dir/site${PYTHONPATH:+:$PYTHONPATH}" "${PYTHON:-python3}" "$root/bench/nvimgcodec_decode.py" "$@"
}

case ${1:-} in
    pack) pack ;;
    decode) shift; decode "$@" ;;
    *) echo "usage: bench/nvimgcodec.sh pack | decode DIR" >&2; exit 2 ;;
esac
