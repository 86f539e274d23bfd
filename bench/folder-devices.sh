#!/usr/bin/env bash
# Which device wins a folder: N 12-megapixel JPEGs through pipelines from light to heavy, to PNG
# level 3 and to JPEG q90, with --device cpu, gpu and auto (what auto chose is in its summary).
# The measurements behind the folder rule of --device auto (core/src/run/cost.c).
# usage: bench/folder-devices.sh [N_IMAGES] [OUT_DIR]   (IMGPIPE_BIN: the imgpipe to run)
set -u
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
n=${1:-60}
out=${2:-.}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=bench/python.sh
. "$src/bench/python.sh"
PY=$(bench_python cv2) || { echo "folder-devices: no Python with OpenCV"; exit 1; }
"$PY" - "$src/samples" "$tmp/in" "$n" <<'PYEOF' || { echo "folder-devices: cannot make images"; exit 1; }
import cv2, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
photos = [cv2.imread(os.path.join(src, f)) for f in ("astronaut.png", "coffee.png", "chelsea.png", "hubble_deep_field.jpg")]
for i in range(n):
    img = cv2.resize(photos[i % len(photos)], (4000, 3000), interpolation=cv2.INTER_CUBIC)
    cv2.imwrite(os.path.join(dst, "img%03d.jpg" % i), img, [cv2.IMWRITE_JPEG_QUALITY, 90])
PYEOF
# label::pipeline text
pipes=(
  "gray::grayscale"
  "denoise::grayscale | median radius=1 | convolve kernel=gaussian3"
  "rgb median 3x3::median radius=1"
  "median 7x7::grayscale | median radius=3"
  "rgb median 7x7 + 15x15::median radius=3 | median radius=7 | convolve kernel=gaussian5"
)
secs() {  # command...: wall seconds, or "fail"
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$tmp/err" || { echo fail; return; }
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }'
}
{
  echo "folder-devices: $n JPEGs 4000x3000, $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
  printf "| pipeline | out | cpu s | gpu s | auto s | auto chose |\n| --- | --- | --: | --: | --: | --- |\n"
  for entry in "${pipes[@]}"; do
    label=${entry%%::*}; text=${entry#*::}
    for fmt in png jpg; do
      c=$(secs "$B" run -q --device cpu --png-level 3 --format $fmt -e "$text" "$tmp/in" "$tmp/c")
      g=$(secs "$B" run -q --device gpu --png-level 3 --format $fmt -e "$text" "$tmp/in" "$tmp/g")
      a=$(secs "$B" run --device auto --png-level 3 --format $fmt -e "$text" "$tmp/in" "$tmp/a")
      chose=$(grep -o "device: [A-Za-z]*" "$tmp/err" | head -n 1)
      printf "| %s | %s | %s | %s | %s | %s |\n" "$label" "$fmt" "$c" "$g" "$a" "${chose:-?}"
      rm -rf "$tmp/c" "$tmp/g" "$tmp/a"
    done
  done
} | tee "$out/folder-devices.md"
