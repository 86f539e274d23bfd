#!/usr/bin/env bash
# Folder throughput (issue 5): N 12-megapixel JPEGs made from the sample photographs (resized,
# flipped, shifted in brightness), denoise.pipe to PNG, against
#   (a) imgpipe with only the cheap first stage (grayscale): decoding plus encoding the same gray
#       PNG, i.e. the same run with the GPU work of median and convolve taken away, and
#   (b) an OpenCV Python script doing the same work with a process per core (imread, cvtColor,
#       medianBlur, GaussianBlur 3x3 as filter2D, imwrite) at the same PNG compression level.
# usage: bench/batch.sh [N_IMAGES] [OUT_DIR]   (IMGPIPE_BIN: the imgpipe to run; DEVICE=cpu|gpu|auto)
set -u
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
n=${1:-200}
out=${2:-.}
device=${DEVICE:-auto}
level=3
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=bench/python.sh
. "$src/bench/python.sh"
PY=$(bench_python cv2) || { echo "batch bench: no Python with OpenCV"; exit 1; }
cores=$(nproc)

"$PY" - "$src/samples" "$tmp/in" "$n" <<'PYEOF' || { echo "batch bench: cannot make images"; exit 1; }
import cv2, numpy as np, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
photos = [cv2.imread(os.path.join(src, f)) for f in ("astronaut.png", "coffee.png", "chelsea.png", "hubble_deep_field.jpg")]
for i in range(n):
    img = cv2.resize(photos[i % len(photos)], (4000, 3000), interpolation=cv2.INTER_CUBIC)
    if i % 2: img = img[:, ::-1]
    img = cv2.convertScaleAbs(img, alpha=1.0, beta=(i * 7) % 40 - 20)
    cv2.imwrite(os.path.join(dst, "img%03d.jpg" % i), img, [cv2.IMWRITE_JPEG_QUALITY, 90])
PYEOF

cat > "$tmp/peer.py" <<'PYEOF'
import cv2, numpy as np, os, sys, time
from multiprocessing import Pool
src, dst, level = sys.argv[1], sys.argv[2], int(sys.argv[3])
k = np.outer([1, 2, 1], [1, 2, 1]).astype(np.float32) / 16
def work(name):
    cv2.setNumThreads(1)
    g = cv2.cvtColor(cv2.imread(os.path.join(src, name)), cv2.COLOR_BGR2GRAY)
    g = cv2.filter2D(cv2.medianBlur(g, 3), -1, k, borderType=cv2.BORDER_REFLECT_101)
    if os.environ.get("PEER_JPEG"):
        cv2.imwrite(os.path.join(dst, name), g, [cv2.IMWRITE_JPEG_QUALITY, 90])
    else:
        cv2.imwrite(os.path.join(dst, name[:-4] + ".png"), g, [cv2.IMWRITE_PNG_COMPRESSION, level])
os.makedirs(dst, exist_ok=True)
names = sorted(os.listdir(src))
t = time.time()
with Pool(os.cpu_count()) as p: p.map(work, names, chunksize=1)
print("%.3f" % (time.time() - t))
PYEOF

timed() {  # label command...: prints seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$tmp/err" || { echo "batch bench: $1 failed: $(tail -n 3 "$tmp/err")" >&2; echo 0; return; }
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}
rm -rf "$tmp/o"
t_denoise=$(timed "$B" run -q --device "$device" --png-level $level --format png "$src/pipelines/denoise.pipe" "$tmp/in" "$tmp/o1")
t_codec=$(timed "$B" run -q --device "$device" --png-level $level --format png -e grayscale "$tmp/in" "$tmp/o2")
t_peer=$("$PY" "$tmp/peer.py" "$tmp/in" "$tmp/o3" $level)
# JPEG out, and JPEG decoded by nvJPEG rather than libjpeg-turbo (--jpeg-decoder gpu)
t_jpg=$(timed "$B" run -q --device "$device" --format jpg "$src/pipelines/denoise.pipe" "$tmp/in" "$tmp/o4")
t_peer_jpg=$(PEER_JPEG=1 "$PY" "$tmp/peer.py" "$tmp/in" "$tmp/o5" $level)
t_cpu_jpg=$(timed "$B" run -q --device cpu --format jpg "$src/pipelines/denoise.pipe" "$tmp/in" "$tmp/o8")
t_cpu_png=$(timed "$B" run -q --device cpu --png-level $level --format png "$src/pipelines/denoise.pipe" "$tmp/in" "$tmp/o9")
t_gpujpeg=$(timed "$B" run --profile --device "$device" --jpeg-decoder gpu --png-level $level --format png "$src/pipelines/denoise.pipe" "$tmp/in" "$tmp/o6")
note_png=$(grep -h "nvJPEG:" "$tmp/err" | tail -n 1)
t_gpujpeg_jpg=$(timed "$B" run --profile --device "$device" --jpeg-decoder gpu --format jpg "$src/pipelines/denoise.pipe" "$tmp/in" "$tmp/o7")
note_jpg=$(grep -h -e "nvJPEG:" -e "GPU memory" "$tmp/err" | tail -n 2 | tr '\n' ';')
{
  echo "batch: $n JPEGs 4000x3000 -> denoise.pipe -> PNG level $level, $cores cores, device $device"
  awk -v cp="$t_cpu_png" -v cj="$t_cpu_jpg" -v kj="$t_gpujpeg_jpg" -v k="$t_gpujpeg" -v j="$t_jpg" -v pj="$t_peer_jpg" -v n="$n" -v d="$t_denoise" -v c="$t_codec" -v p="$t_peer" 'BEGIN {
    printf "  imgpipe denoise.pipe        %7.2f s  %6.2f images/s\n", d, n / d
    printf "  imgpipe denoise.pipe, --device cpu %5.2f s  %6.2f images/s   imgpipe/(b) = %.2fx\n", cp, n / cp, p / cp
    printf "  imgpipe grayscale only (a)  %7.2f s  %6.2f images/s   denoise/(a) = %.0f%% (target >= 90%%)\n", c, n / c, 100 * c / d
    printf "  OpenCV, %s processes (b)    %7.2f s  %6.2f images/s   imgpipe/(b) = %.2fx (target >= 2x)\n", "'"$cores"'", p, n / p, p / d
    printf "  imgpipe, --jpeg-decoder gpu %7.2f s  %6.2f images/s\n", k, n / k
    printf "  -> JPEG q90: imgpipe        %7.2f s  %6.2f images/s   OpenCV %.2f s, imgpipe/OpenCV = %.2fx (target >= 2x)\n", j, n / j, pj, pj / j
    printf "  -> JPEG q90, nvJPEG both ways %5.2f s  %6.2f images/s   imgpipe/OpenCV = %.2fx (target >= 2x)\n", kj, n / kj, pj / kj
    printf "  -> JPEG q90, --device cpu     %5.2f s  %6.2f images/s   imgpipe/OpenCV = %.2fx\n", cj, n / cj, pj / cj
    printf "  -> PNG, nvJPEG decoding       %5.2f s  imgpipe/OpenCV = %.2fx (target >= 2x)\n", k, p / k
  }'
  echo "  PNG run:  ${note_png:-no nvJPEG note}"
  echo "  JPEG run: ${note_jpg:-no nvJPEG note}"
} | tee "$out/batch.txt"
