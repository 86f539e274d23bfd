#!/usr/bin/env bash
# Where a JPEG -> PNG run's encoding goes on the GPU (issue 29 item 3): one 12-MP photograph, then a
# folder of 48 of them, through denoise.pipe to PNG level 3 with --profile -v, the whole stderr kept.
# usage: IMGPIPE_BIN=... bench/png-gpu-probe.sh
set -u
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/python.sh"
PY=$(bench_python cv2 numpy) || { echo "no Python with OpenCV"; exit 1; }
"$PY" - "$src/samples" "$tmp/in" <<'PYEOF'
import cv2, numpy as np, os, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
t = cv2.imread(os.path.join(src, "astronaut.png"))
img = cv2.resize(np.tile(t, (6, 8, 1)), (4000, 3000))
for i in range(48):
    cv2.imwrite(os.path.join(dst, "p%02d.jpg" % i), cv2.convertScaleAbs(img, beta=i % 20), [cv2.IMWRITE_JPEG_QUALITY, 90])
PYEOF
for dev in cpu gpu; do
  echo "=== single, --device $dev"
  /usr/bin/time -f "wall %e s" "$B" run -v --profile --device $dev --jpeg-decoder gpu --png-level 3 "$src/pipelines/denoise.pipe" "$tmp/in/p00.jpg" "$tmp/o_$dev.png" 2>&1 | tail -n 30
  ls -la "$tmp/o_$dev.png"
done
echo "=== folder of 48, --device gpu"
/usr/bin/time -f "wall %e s" "$B" run -v --profile --device gpu --jpeg-decoder gpu --png-level 3 --format png "$src/pipelines/denoise.pipe" "$tmp/in" "$tmp/of" 2>&1 | grep -v "^imgpipe: .*\.jpg" | tail -n 30
echo "=== folder of 48, --device gpu --jobs 4"
/usr/bin/time -f "wall %e s" "$B" run -v --profile --device gpu --jpeg-decoder gpu --jobs 4 --png-level 3 --format png "$src/pipelines/denoise.pipe" "$tmp/in" "$tmp/of4" 2>&1 | grep -v "^imgpipe: .*\.jpg" | tail -n 12
