#!/usr/bin/env bash
# Where the time of one large JPEG goes with nvJPEG (issue 10): an 8192x8192 mosaic of the sample
# photographs as JPEG q90, through denoise.pipe to JPEG, PNG and TIFF with --device gpu
# --jpeg-decoder gpu --profile (each in a fresh process, the second of two runs shown), beside the
# whole-process wall time of --device cpu.
# usage: bench/jpeg-profile.sh [OUT_DIR]   (IMGPIPE_BIN: the imgpipe to run; SIZE: default 8192)
set -u
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
out=${1:-.}
size=${SIZE:-8192}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PY=/usr/bin/python3
"$PY" -c "import cv2" 2>/dev/null || PY=python3
"$PY" - "$src/samples" "$tmp/in.jpg" "$size" <<'PYEOF' || { echo "jpeg-profile: cannot make the image"; exit 1; }
import cv2, numpy as np, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tiles = [cv2.imread(os.path.join(src, f)) for f in ("astronaut.png", "coffee.png", "chelsea.png", "hubble_deep_field.jpg")]
tiles = [cv2.resize(t, (1024, 1024)) for t in tiles]
rows = [np.hstack([tiles[(r + c) % 4] for c in range(n // 1024 + 1)]) for r in range(n // 1024 + 1)]
cv2.imwrite(dst, np.vstack(rows)[:n, :n], [cv2.IMWRITE_JPEG_QUALITY, 90])
PYEOF
wall() {  # prints the whole process's seconds; its stderr in $tmp/err
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$tmp/err" || echo "failed: $(tail -n 2 "$tmp/err")" >&2
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}
{
  echo "jpeg-profile: ${size}x${size} JPEG q90 ($(stat -c %s "$tmp/in.jpg") bytes) -> denoise.pipe"
  for ext in jpg png tif; do
    wall "$B" run --device gpu --jpeg-decoder gpu --profile "$src/pipelines/denoise.pipe" "$tmp/in.jpg" "$tmp/o.$ext" >/dev/null
    g=$(wall "$B" run --device gpu --jpeg-decoder gpu --profile "$src/pipelines/denoise.pipe" "$tmp/in.jpg" "$tmp/o.$ext")
    cp "$tmp/err" "$tmp/profile.$ext"
    c=$(wall "$B" run --device cpu "$src/pipelines/denoise.pipe" "$tmp/in.jpg" "$tmp/c.$ext")
    a=$(wall "$B" run --device auto "$src/pipelines/denoise.pipe" "$tmp/in.jpg" "$tmp/a.$ext")
    echo "jpg->$ext: gpu+nvJPEG ${g} s, cpu ${c} s, auto ${a} s ($(grep -o 'device: [A-Z]*' "$tmp/err" | head -n 1))"
    sed 's/^/    /' "$tmp/profile.$ext"
  done
} | tee "$out/jpeg-profile.txt"
