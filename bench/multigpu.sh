#!/usr/bin/env bash
# Several GPUs (issue 5): the same folder through a GPU-heavy pipeline with one GPU and with all,
# outputs compared byte for byte, throughput and scaling printed.
# usage: bench/multigpu.sh [N_IMAGES] [OUT_DIR]   (IMGPIPE_BIN: the imgpipe to run;
#   MULTIGPU_PIPELINE: the pipeline text; JPEG_DECODER: imgpipe's --jpeg-decoder, default auto)
set -u
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
n=${1:-64}
out=${2:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=bench/python.sh
. "$(dirname "$0")/python.sh"
PY=$(bench_python cv2) || { echo "multigpu: no Python with OpenCV"; exit 1; }
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
"$PY" - "$(dirname "$0")/../samples" "$tmp/in" "$n" <<'PYEOF' || exit 1
import cv2, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
photos = [cv2.imread(os.path.join(src, f)) for f in ("astronaut.png", "coffee.png", "chelsea.png")]
for i in range(n):
    img = cv2.resize(photos[i % 3], (4000, 3000), interpolation=cv2.INTER_LINEAR)
    cv2.imwrite(os.path.join(dst, "img%03d.jpg" % i), img if i % 2 else img[:, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])
PYEOF
P=${MULTIGPU_PIPELINE:-"grayscale | median radius=15 | mean radius=15 | median radius=15 | median radius=15"}
timed() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$tmp/err" || { echo "multigpu: failed: $(tail -n 3 "$tmp/err")" >&2; echo 0; return; }
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}
dec=${JPEG_DECODER:-auto}
t1=$(timed "$B" run -q --device gpu --jpeg-decoder "$dec" --gpus 0 --format jpg -e "$P" "$tmp/in" "$tmp/one")
tn=$(timed "$B" run -q --device gpu --jpeg-decoder "$dec" --gpus all --format jpg -e "$P" "$tmp/in" "$tmp/all")
same=$(cd "$tmp/one" && for f in *; do cmp -s "$f" "../all/$f" || echo "$f"; done | wc -l)
{
  echo "multi-GPU: $n JPEGs 4000x3000, '$P' -> JPEG, --jpeg-decoder $dec, $(nproc) cores, $gpus GPUs ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1))"
  awk -v n="$n" -v a="$t1" -v b="$tn" -v g="$gpus" 'BEGIN {
    printf "  --gpus 0    %7.2f s  %6.2f images/s\n", a, n / a
    printf "  --gpus all  %7.2f s  %6.2f images/s  scaling %.2fx on %d GPUs\n", b, n / b, a / b, g }'
  echo "  outputs differing between one GPU and all: $same of $n"
} | tee "$out/multigpu.txt"
[ "$same" -eq 0 ]
