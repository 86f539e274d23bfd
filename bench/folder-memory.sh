#!/usr/bin/env bash
# Device memory over a long folder (issue 29 item 6): N images (default 2000; 2048x1536 JPEGs and
# 1024x768 TIFFs of a photograph, shifted and brightened) through denoise.pipe on the GPU, once as JPEG -> JPEG with nvJPEG
# (--jpeg-decoder gpu), once as JPEG -> PNG level 3 (the card's PNG writer, each file written
# behind the worker's next decode) and once as deflate TIFF -> deflate TIFF with the GPU codecs (--codecs gpu),
# while nvidia-smi samples GPU 0's used memory every 0.1 s (the run is the only process on it). Flat: after a first quarter of
# warm-up (workers starting, decoder states made), the peak over the second half of the samples is
# within 64 MiB of the peak over the second quarter (samples at the idle reading, before the
# process holds memory, are left out). Prints one
# line a run and exits 1 when memory grew or a run failed.
# usage: bench/folder-memory.sh [N] [OUT_DIR]   (IMGPIPE_BIN: the imgpipe to run)
set -u
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
n=${1:-2000}
out=${2:-.}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=bench/python.sh
. "$src/bench/python.sh"
PY=$(bench_python cv2) || { echo "folder-memory: no Python with OpenCV"; exit 1; }
command -v nvidia-smi >/dev/null || { echo "folder-memory: skipped, no nvidia-smi here"; exit 0; }

"$PY" - "$src/samples" "$tmp" "$n" <<'PYEOF' || { echo "folder-memory: cannot make images"; exit 1; }
import cv2, numpy as np, os, sys
from multiprocessing import Pool
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for d in ("jpg", "tif"):
    os.makedirs(os.path.join(dst, d), exist_ok=True)
photo = cv2.resize(cv2.imread(os.path.join(src, "astronaut.png")), (2048, 1536))
def make(i):
    img = np.roll(photo, (i * 37) % 1536, axis=0)
    img = cv2.convertScaleAbs(img, alpha=1.0, beta=(i * 7) % 30 - 15)
    cv2.imwrite(os.path.join(dst, "jpg", "i%05d.jpg" % i), img, [cv2.IMWRITE_JPEG_QUALITY, 90])
    cv2.imwrite(os.path.join(dst, "tif", "i%05d.tif" % i), cv2.resize(img, (1024, 768)), [cv2.IMWRITE_TIFF_COMPRESSION, 8])
with Pool(os.cpu_count()) as p: p.map(make, range(n))
PYEOF

status=0
# label in_dir ext args...
measure() {
  local label=$1 dir=$2 ext=$3 pid samples
  shift 3
  rm -rf "$tmp/o"
  idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -n 1)
  "$B" run -v --device gpu --format "$ext" "$@" "$src/pipelines/denoise.pipe" "$tmp/$dir" "$tmp/o" \
    >/dev/null 2>"$tmp/err.$label" &
  pid=$!
  : >"$tmp/mem.$label"
  while kill -0 "$pid" 2>/dev/null; do
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null >>"$tmp/mem.$label"
    sleep 0.1
  done
  wait "$pid"
  local rc=$? made
  made=$(ls "$tmp/o" 2>/dev/null | wc -l)
  awk -v l="$label" -v rc="$rc" -v made="$made" -v n="$n" -v idle="${idle:-0}" '
    $1 > idle + 0 { v[++k] = $1 }
    END {
      q = int(k / 4); warm = 0; late = 0; shape = ""
      for (i = q + 1; i <= k; i++) { if (i <= 2 * q) { if (v[i] > warm) warm = v[i] } else if (v[i] > late) late = v[i] }
      for (d = 1; d <= 10; d++) { m = 0; for (i = int((d - 1) * k / 10) + 1; i <= int(d * k / 10); i++) if (v[i] > m) m = v[i]; shape = shape " " m }
      flat = k >= 8 && late <= warm + 64
      printf "%s: %s, %d of %d images written, %d samples; device memory peak %d MiB in the second quarter, %d MiB in the second half: %s (peaks by tenths, MiB:%s)\n",
             l, rc == 0 ? "ran" : "FAILED", made, n, k, warm, late, k < 8 ? "TOO FEW SAMPLES" : flat ? "flat" : "GREW", shape
      exit !(rc == 0 && made == n && flat)
    }' "$tmp/mem.$label" || status=1
  grep -e "GPU memory" -e "nvJPEG:" -e "succeeded" "$tmp/err.$label" | sed 's/^/    /'
}
exec > >(tee "$out/folder-memory.txt")   # not a pipe: status stays in this shell
echo "folder-memory: $n images (JPEGs 2048x1536, TIFFs 1024x768), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
measure "JPEG -> JPEG, nvJPEG" jpg jpg --jpeg-decoder gpu --profile
measure "JPEG -> PNG level 3, the card's PNG writer behind" jpg png --png-level 3 --profile
measure "deflate TIFF -> deflate TIFF, GPU codecs" tif tif --codecs gpu
exit $status
