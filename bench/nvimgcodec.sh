#!/usr/bin/env bash
# nvImageCodec, NVIDIA's codec library, as a peer on the GPU machine (which has no network):
#   bench/nvimgcodec.sh pack   (here) downloads its cu13 wheel from PyPI and keeps only what a
#                              JPEG decode on Python 3.12 needs, in build-nvimg/nvimgcodec.tgz
#                              (about 5 MiB: carry it with the run)
#   bench/nvimgcodec.sh decode DIR   (there) times its hardware decoder on DIR's JPEGs with
#                              bench/nvimgcodec_decode.py (PYTHON: the interpreter, python3)
#   bench/nvimgcodec.sh transcode DIR BATCH gray|rgb   (there) times a whole process of
#                              bench/nvimgcodec_transcode.py: DIR's JPEGs to JPEG q90 on the GPU
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

unpack() {
    [ -f "$dir/nvimgcodec.tgz" ] || { echo "nvimgcodec: no build-nvimg/nvimgcodec.tgz carried"; return 1; }
    [ "$dir/site" -nt "$dir/nvimgcodec.tgz" ] && return 0   # unpacked from this wheel already
    (cd "$dir" && rm -rf site && tar -xzf nvimgcodec.tgz && touch site)
}

# SCRIPT ARGS...: bench/SCRIPT with the unpacked library on Python's path
run_py() {
    local script=$1
    shift
    unpack || return 1
    PYTHONPATH="$dir/site${PYTHONPATH:+:$PYTHONPATH}" "${PYTHON:-python3}" "$root/bench/$script" "$@"
}

decode() { run_py nvimgcodec_decode.py "$@"; }

# DIR: the JPEGs in it as the Python scripts take them (.jpg or .jpeg, any case)
count_jpegs() { find "$1" -maxdepth 1 -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) | wc -l; }

# in batch color: one table row, the process timed from outside; its time stamps follow it
transcode() {
    local in=$1 batch=$2 color=$3 out t0 t1 n
    unpack || return 1   # before the clock starts
    out=$(mktemp -d) && n=$(count_jpegs "$in")
    t0=$(date +%s.%N)
    run_py nvimgcodec_transcode.py "$in" "$out" "$batch" "$color" 2>"$out.log" || { echo "nvimgcodec: transcode failed: $(tail -n 1 "$out.log")"; rm -rf "$out" "$out.log"; return 1; }
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v n="$n" -v w="$(count_jpegs "$out")" -v c="$color" -v k="$batch" \
        -v mb="$(du -sb "$out" | cut -f1)" 'BEGIN {
        printf "| nvImageCodec, JPEG -> JPEG q90 (%s), batches of %d | %d of %d written | %.3f s | %.1f images/s | %.1f MB |\n",
               c, k, w, n, b - a, n / (b - a), mb / 1e6 }'
    sed 's/^/  /' "$out.log"
    rm -rf "$out" "$out.log"
}

case ${1:-} in
    pack) pack ;;
    decode) shift; decode "$@" ;;
    transcode) shift; [ $# -eq 3 ] || { echo "usage: bench/nvimgcodec.sh transcode DIR BATCH gray|rgb" >&2; exit 2; }
               transcode "$@" ;;
    *) echo "usage: bench/nvimgcodec.sh pack | decode DIR | transcode DIR BATCH gray|rgb" >&2; exit 2 ;;
esac
