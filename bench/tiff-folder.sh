#!/usr/bin/env bash
# TIFF folders (issue 29, target 5): N 12-megapixel RGB deflate TIFFs (horizontal predictor, made
# from the sample photographs as bench/batch.sh makes its JPEGs) through pipelines/denoise.pipe to
# deflate TIFFs, whole process, against an OpenCV script with a process per core doing the same
# work (imread, cvtColor, medianBlur, filter2D, imwrite with deflate and the predictor, at
# libtiff's default level 6). imgpipe runs at that level and at --tiff-level 1, on each device
# and with the GPU codecs off (--codecs cpu). Prints images/s and the outputs' total size.
# usage: IMGPIPE_BIN=... bench/tiff-folder.sh [N_IMAGES] [OUT_DIR]   (default 200, $OUT or .)
# PROFILE=1: also the GPU level-6 run under --profile, its report in OUT_DIR/tiff-folder-profile.txt.
# EXTRA="6:IMGPIPE_TIFF_GPU_SHARE=30 1:--jobs=32 ...": more GPU rows, each at a level with one
# setting in its environment or one option.
set -u
export LC_ALL=C
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
n=${1:-200}
out=${2:-${OUT:-.}}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
# shellcheck source=bench/python.sh
. "$here/python.sh"
PY=$(bench_python cv2 numpy) || { echo "tiff-folder: no Python with OpenCV and numpy"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cores=$(nproc)

"$PY" - "$src/samples" "$tmp/in" "$n" <<'PYEOF' || { echo "tiff-folder: cannot make images"; exit 2; }
import cv2, os, sys
from multiprocessing import Pool
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
names = ("astronaut.png", "coffee.png", "chelsea.png", "hubble_deep_field.jpg")
params = [cv2.IMWRITE_TIFF_COMPRESSION, 8]
if hasattr(cv2, "IMWRITE_TIFF_PREDICTOR"):
    params += [cv2.IMWRITE_TIFF_PREDICTOR, 2]
def make(i):
    img = cv2.imread(os.path.join(src, names[i % len(names)]))
    img = cv2.resize(img, (4000, 3000), interpolation=cv2.INTER_CUBIC)
    if i % 2: img = img[:, ::-1]
    img = cv2.convertScaleAbs(img, alpha=1.0, beta=(i * 7) % 40 - 20)
    cv2.imwrite(os.path.join(dst, "img%03d.tif" % i), img, params)
with Pool(os.cpu_count()) as p: p.map(make, range(n))
PYEOF

cat > "$tmp/peer.py" <<'PYEOF'
import cv2, numpy as np, os, sys, time
from multiprocessing import Pool
src, dst = sys.argv[1], sys.argv[2]
k = np.outer([1, 2, 1], [1, 2, 1]).astype(np.float32) / 16
params = [cv2.IMWRITE_TIFF_COMPRESSION, 8]
if hasattr(cv2, "IMWRITE_TIFF_PREDICTOR"):
    params += [cv2.IMWRITE_TIFF_PREDICTOR, 2]
def work(name):
    cv2.setNumThreads(1)
    g = cv2.cvtColor(cv2.imread(os.path.join(src, name)), cv2.COLOR_BGR2GRAY)
    g = cv2.filter2D(cv2.medianBlur(g, 3), -1, k, borderType=cv2.BORDER_REFLECT_101)
    cv2.imwrite(os.path.join(dst, name), g, params)
os.makedirs(dst, exist_ok=True)
names = sorted(os.listdir(src))
t = time.time()
with Pool(os.cpu_count()) as p: p.map(work, names, chunksize=1)
print("%.3f" % (time.time() - t))
PYEOF

bytes_of() { du -sb "$1" 2>/dev/null | cut -f1; }
rows=()
run_row() {  # label dir command...: one imgpipe run, timed as a whole process
  local label=$1 dir=$2 t0 t1 s
  shift 2
  rm -rf "$dir"
  t0=$(date +%s.%N)
  if ! "$@" >"$tmp/log" 2>&1; then
    rows+=("| $label | failed: $(tail -n 1 "$tmp/log") | | |")
    return
  fi
  t1=$(date +%s.%N)
  s=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
  rows+=("$(awk -v l="$label" -v s="$s" -v n="$n" -v b="$(bytes_of "$dir")" -v d="$(grep -m1 -o 'device: .*' "$tmp/log" | cut -c1-90)" \
    'BEGIN { printf "| %s | %.2f s | %.1f | %.1f MB | %s |", l, s, n / s, b / 1e6, d }')")
}

t_peer=$("$PY" "$tmp/peer.py" "$tmp/in" "$tmp/peer")
rows+=("$(awk -v s="$t_peer" -v n="$n" -v b="$(bytes_of "$tmp/peer")" -v c="$cores" \
  'BEGIN { printf "| OpenCV, %d processes, level 6 | %.2f s | %.1f | %.1f MB | |", c, s, n / s, b / 1e6 }')")
pipe=$src/pipelines/denoise.pipe
for dev in cpu gpu auto; do
  run_row "imgpipe --device $dev, level 6" "$tmp/o" "$B" run -v --device "$dev" --tiff-level 6 "$pipe" "$tmp/in" "$tmp/o"
done
run_row "imgpipe --device gpu --codecs gpu, level 6" "$tmp/o" "$B" run -v --device gpu --codecs gpu --tiff-level 6 "$pipe" "$tmp/in" "$tmp/o"
run_row "imgpipe --device gpu --codecs cpu, level 6" "$tmp/o" "$B" run -v --device gpu --codecs cpu --tiff-level 6 "$pipe" "$tmp/in" "$tmp/o"
if [ "${PROFILE:-0}" = 1 ]; then
  run_row "imgpipe --device gpu --profile, level 6" "$tmp/o" "$B" run -v --profile --device gpu --tiff-level 6 "$pipe" "$tmp/in" "$tmp/o"
  cp "$tmp/log" "$out/tiff-folder-profile.txt"
fi
for extra in ${EXTRA:-}; do
  setting=${extra#*:} env_set=IMGPIPE_BENCH_ROW=1 opt_set=-v
  case $setting in --*) opt_set=${setting/=/ } ;; *) env_set=$setting ;; esac
  # shellcheck disable=SC2086 # opt_set is an option and its value
  run_row "imgpipe --device gpu, level ${extra%%:*}, $setting" "$tmp/o" env "$env_set" "$B" run -v $opt_set \
    --device gpu --tiff-level "${extra%%:*}" "$pipe" "$tmp/in" "$tmp/o"
done
for dev in cpu gpu; do
  run_row "imgpipe --device $dev, level 1" "$tmp/o" "$B" run -v --device "$dev" --tiff-level 1 "$pipe" "$tmp/in" "$tmp/o"
done
{
  echo "tiff-folder: $n RGB deflate TIFFs 4000x3000 -> denoise.pipe -> deflate TIFF (predictor 2), $cores cores, $(date -u +%F), commit ${COMMIT:-?}"
  echo
  echo "| run | wall | images/s | output | device line |"
  echo "| --- | --: | --: | --: | --- |"
  printf '%s\n' "${rows[@]}"
} | tee "$out/tiff-folder.md"
