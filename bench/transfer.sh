#!/usr/bin/env bash
# Copy versus zero-copy transfers through the command line's --profile, on the GPU machine:
# an 8192x8192 RGB image through one cheap stage and through denoise.pipe, each run 5 times;
# prints the median of upload, stages, download and the whole run's wall time.
# usage: bench/transfer.sh [OUT_DIR]   (IMGPIPE_BIN: the imgpipe to run)
set -u
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
out=${1:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PY=$(command -v python3)
"$PY" -c "
import numpy as np, sys
sys.path.insert(0, '')
r = np.random.default_rng(3)
img = (r.integers(0, 256, (8192, 8192, 3), dtype=np.uint8) // 2 + np.arange(8192, dtype=np.uint16)[None, :, None] % 128).astype(np.uint8)
import cv2
cv2.imwrite('$tmp/big.tif', img)
" || { echo "transfer: cannot make the test image"; exit 1; }
row() {  # label transfer pipeline
  local label=$1 transfer=$2 text=$3
  for i in 1 2 3 4 5; do
    "$B" run -q --device gpu --profile --transfer "$transfer" -e "$text" "$tmp/big.tif" "$tmp/o.tif" 2>>"$tmp/$label.log" || return 1
  done
  "$PY" - "$tmp/$label.log" "$label" <<'PYEOF'
import re, sys, statistics
vals = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s+(.+?)\s+([0-9.]+) ms$", line)
    if m: vals.setdefault(m.group(1), []).append(float(m.group(2)))
keys = ["upload"] + [k for k in vals if "(gpu" in k or "round trip" in k] + ["download", "run (wall)"]
print("%-22s " % sys.argv[2] + "  ".join("%s %.3f" % (k, statistics.median(vals[k])) for k in keys if k in vals))
PYEOF
}
{
  echo "transfers, 8192x8192 RGB u8, median of 5 runs (ms):"
  row gray-copy copy "grayscale"
  row gray-zerocopy zerocopy "grayscale"
  row denoise-copy copy "grayscale | median radius=1 | convolve kernel=gaussian3"
  row denoise-zerocopy zerocopy "grayscale | median radius=1 | convolve kernel=gaussian3"
} | tee "$out/transfer.txt"
