#!/usr/bin/env bash
# A folder of JPEG photographs at the GPU's JPEG rate (issue 29 items 1 and 4): N 12-megapixel
# JPEGs q90 (mosaics of the sample photographs, flipped and brightened: photographic detail, never
# flat) through denoise.pipe to JPEG q90 and to PNG level 3, with --device cpu, gpu, gpu
# --jpeg-decoder gpu (with and without the read-ahead decoder: IMGPIPE_JPEG_AHEAD=off; its engine
# alone, without the workers' CPU decoding beside it: =engine; its readers parsing whole files, not
# headers: IMGPIPE_JPEG_AHEAD_PARSE=whole), gpu+cpu
# (GPU and CPU workers from one queue, with and without nvJPEG) and
# auto (which measures the arrangements on the first images and says what it chose), beside an
# OpenCV script with a process per core (bench/batch.sh's). Prints images/s (whole process and the
# folder's own summary) and the first device line, then each run's notes: the device and workers
# lines (auto's measured rates), where a worker's time goes (decode, stages, encode and write; how
# many images GPU and CPU workers took), the shared decoder's batches and waits.
# Needs nothing from the network; about 2 minutes on the 16-core H100 machine.
# usage: bench/jpeg-folder.sh [N_IMAGES] [OUT_DIR]   (IMGPIPE_BIN: the imgpipe to run; ONLY: the
# labels of the rows to run, all by default, "peer" for OpenCV's, "nvimgcodec" for nvImageCodec's
# decoding rate on the same files, from build-nvimg/nvimgcodec.tgz; FORMATS: "jpg png" by default;
# IN_DIR: a folder for the images, kept and reused by the next run when it holds N of them)
set -u
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
n=${1:-200}
out=${2:-.}
level=3
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=bench/python.sh
. "$src/bench/python.sh"
PY=$(bench_python cv2) || { echo "jpeg-folder: no Python with OpenCV"; exit 1; }
cores=$(nproc)

in=${IN_DIR:-$tmp/in}
if [ "$(find "$in" -maxdepth 1 -name 'img*.jpg' 2>/dev/null | wc -l)" -ne "$n" ]; then
rm -rf "$in"
"$PY" - "$src/samples" "$in" "$n" <<'PYEOF' || { echo "jpeg-folder: cannot make images"; exit 1; }
import cv2, numpy as np, os, sys
from multiprocessing import Pool
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
names = ("astronaut.png", "coffee.png", "chelsea.png", "hubble_deep_field.jpg")
tiles = [cv2.imread(os.path.join(src, f)) for f in names]
tiles = [cv2.resize(t, (round(t.shape[1] * 512 / t.shape[0]), 512), interpolation=cv2.INTER_AREA) for t in tiles]
def mosaic(seed):
    rng = np.random.default_rng(seed)
    img = np.empty((3000, 4000, 3), np.uint8)
    for y in range(0, 3000, 512):
        x = -int(rng.integers(0, 512))
        while x < 4000:
            t = tiles[int(rng.integers(0, len(tiles)))]
            if rng.integers(0, 2): t = t[:, ::-1]
            t = cv2.convertScaleAbs(t, alpha=1.0, beta=int(rng.integers(-20, 21)))
            x0, x1 = max(x, 0), min(x + t.shape[1], 4000)
            rows = min(512, 3000 - y)
            img[y:y + rows, x0:x1] = t[:rows, x0 - x:x1 - x]
            x += t.shape[1]
    return img
def make(i):
    img = mosaic(i % 16)
    if i // 16 % 2: img = img[::-1]
    img = cv2.convertScaleAbs(img, alpha=1.0, beta=(i * 7) % 30 - 15)
    cv2.imwrite(os.path.join(dst, "img%04d.jpg" % i), img, [cv2.IMWRITE_JPEG_QUALITY, 90])
with Pool(os.cpu_count()) as p: p.map(make, range(n))
a = cv2.imread(os.path.join(dst, "img0000.jpg"))
assert a is not None and a.std() > 20, "the test images must not be flat"
PYEOF
fi

cat > "$tmp/peer.py" <<'PYEOF'
import cv2, numpy as np, os, sys, time
from multiprocessing import Pool
src, dst, ext, level = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
k = np.outer([1, 2, 1], [1, 2, 1]).astype(np.float32) / 16
def work(name):
    cv2.setNumThreads(1)
    g = cv2.cvtColor(cv2.imread(os.path.join(src, name)), cv2.COLOR_BGR2GRAY)
    g = cv2.filter2D(cv2.medianBlur(g, 3), -1, k, borderType=cv2.BORDER_REFLECT_101)
    params = [cv2.IMWRITE_JPEG_QUALITY, 90] if ext == "jpg" else [cv2.IMWRITE_PNG_COMPRESSION, level]
    cv2.imwrite(os.path.join(dst, name[:-4] + "." + ext), g, params)
os.makedirs(dst, exist_ok=True)
names = sorted(os.listdir(src))
t = time.time()
with Pool(os.cpu_count()) as p: p.map(work, names, chunksize=1)
print("%.3f" % (time.time() - t))
PYEOF

# label fmt args...: one table row; the run's stderr kept in $tmp/err.<label>.<fmt>
row() {
  local label=$1 fmt=$2 t0 t1 wall inner chose bytes
  shift 2
  case " ${ONLY:-$label} " in *" $label "*) ;; *) return ;; esac
  rm -rf "$tmp/o"
  t0=$(date +%s.%N)
  if ! env ${ROW_ENV:-} "$B" run --png-level $level --format "$fmt" "$@" "$src/pipelines/denoise.pipe" "$in" "$tmp/o" \
       >/dev/null 2>"$tmp/err.$label.$fmt"; then
    printf "| %s | %s | failed: %s | | | | |\n" "$label" "$fmt" "$(grep -v 'images/s, ' "$tmp/err.$label.$fmt" | tail -n 1)"
    return
  fi
  t1=$(date +%s.%N)
  wall=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
  inner=$(grep -o '; [0-9.]* s$' "$tmp/err.$label.$fmt" | tail -n 1 | tr -dc '0-9.')
  chose=$(grep -o 'device: [^(]*' "$tmp/err.$label.$fmt" | head -n 1 | sed 's/ *$//')
  bytes=$(du -sb "$tmp/o" | cut -f1)
  awk -v l="$label" -v f="$fmt" -v w="$wall" -v i="${inner:-0}" -v n="$n" -v c="${chose:-?}" -v b="$bytes" 'BEGIN {
    printf "| %s | %s | %.2f | %.1f | %s | %.1f | %s |\n", l, f, w, n / w, (i > 0 ? sprintf("%.1f", n / i) : "?"), b / 1e6, c }'
}
peer() {  # fmt
  local s bytes
  case " ${ONLY:-peer} " in *" peer "*) ;; *) return ;; esac
  s=$("$PY" "$tmp/peer.py" "$in" "$tmp/peer.$1" "$1" $level)
  bytes=$(du -sb "$tmp/peer.$1" | cut -f1)
  awk -v s="$s" -v n="$n" -v f="$1" -v c="$cores" -v b="$bytes" 'BEGIN {
    printf "| OpenCV, %d processes | %s | %.2f | %.1f | - | %.1f | - |\n", c, f, s, n / s, b / 1e6 }'
}
{
  echo "jpeg-folder: $n JPEGs 4000x3000 q90 ($(du -cb "$in"/img*.jpg | tail -n 1 | awk -v n="$n" '{ printf "%.2f MB", $1 / n / 1e6 }') a file: the hardware decoder's time follows it) -> denoise.pipe, $cores cores, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
  echo "| run | out | s | images/s (process) | images/s (folder summary) | output MB | device line |"
  echo "| --- | --- | --: | --: | --: | --: | --- |"
  for fmt in ${FORMATS:-jpg png}; do
    row cpu "$fmt" --device cpu
    row gpu "$fmt" --profile --device gpu
    row gpu-nvjpeg "$fmt" --profile --device gpu --jpeg-decoder gpu
    row gpu-nvjpeg-noprofile "$fmt" --device gpu --jpeg-decoder gpu
    ROW_ENV=IMGPIPE_JPEG_AHEAD=off row gpu-nvjpeg-noahead "$fmt" --profile --device gpu --jpeg-decoder gpu
    ROW_ENV=IMGPIPE_JPEG_AHEAD=engine row gpu-nvjpeg-engine "$fmt" --profile --device gpu --jpeg-decoder gpu
    ROW_ENV=IMGPIPE_JPEG_AHEAD_PARSE=whole row gpu-nvjpeg-wholeparse "$fmt" --profile --device gpu --jpeg-decoder gpu
    row gpu-nvjpeg-j48 "$fmt" --profile --device gpu --jpeg-decoder gpu --jobs 48
    row gpu-nvjpeg-j8 "$fmt" --profile --device gpu --jpeg-decoder gpu --jobs 8
    row gpu+cpu "$fmt" --profile --device gpu+cpu
    row gpu+cpu-nvjpeg "$fmt" --profile --device gpu+cpu --jpeg-decoder gpu
    row auto "$fmt" --device auto
    row auto-nvjpeg "$fmt" --device auto --jpeg-decoder gpu
    peer "$fmt"
  done
  case " ${ONLY:-} " in   # decoding alone, by NVIDIA's library on the same files (bench/nvimgcodec.sh)
    *" nvimgcodec "*) bash "$src/bench/nvimgcodec.sh" decode "$in" 64 200 1 2>&1 | tail -n 12 ;;
  esac
  for run in gpu-nvjpeg gpu-nvjpeg-noahead gpu-nvjpeg-engine gpu-nvjpeg-wholeparse gpu-nvjpeg-j48 gpu-nvjpeg-j8 gpu gpu+cpu gpu+cpu-nvjpeg auto auto-nvjpeg; do
    for f in "$tmp/err.$run.jpg" "$tmp/err.$run.png"; do
      [ -f "$f" ] || continue
      echo "--- $(basename "$f"): notes"
      grep -e "workers:" -e "nvJPEG" -e "GPU memory" -e "device:" -e "worker" -e "succeeded" -e "GPU cannot" "$f" |
        grep -v "images/s, " | sed 's/^/    /'
    done
  done
} | tee "$out/jpeg-folder.txt"
