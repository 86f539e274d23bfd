# The limits on untrusted files through the command line: each option is listed, refuses one over
# with one line naming it, passes at the limit with the right pixels; a 45-byte PNG claiming
# 100000x100000 is refused within a small address space (nothing large was allocated).
. "$(dirname "$0")/lib.bash"
B=$IMGPIPE_BIN
cd "$TMP"

expect 0 "--help" "$B" --help
cp "$TMP/.stdout" help.txt
for option in --max-pixels --max-ratio --max-jpeg-scans --max-tiff-blocks --max-tiff-tile-bytes; do
  grep -q -- "$option N" help.txt && ok || bad "--help lacks $option"
  expect 2 "$option 0" "$B" run "$option" 0 -e grayscale a.png b.png
  says "$option 0" "$option expects a whole number from 1 to"
done

# The files: a hand-made PNG header, a progressive JPEG, a TIFF in strips, a hand-made tiled TIFF
# (one 32x32 tile over 20x20 pixels), a blank PNG; and the reference pixels of each.
"$PY" - <<'PYEOF' || bad "making the inputs"
import struct, zlib, numpy as np
from PIL import Image
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
open('huge.png', 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 100000, 100000, 8, 0, 0, 0, 0))
                             + chunk(b'IEND', b''))
rng = np.random.default_rng(13)
Image.fromarray(rng.integers(0, 256, (97, 131, 3), dtype=np.uint8)).save('prog.jpg', progressive=True, quality=85)
Image.fromarray(rng.integers(0, 256, (1031, 1021, 3), dtype=np.uint8)).save('strips.png')
tile = rng.integers(0, 256, (32, 32), dtype=np.uint8)
np.save('tile.npy', tile)
tags = [(256, 3, 20), (257, 3, 20), (258, 3, 8), (259, 3, 1), (262, 3, 1), (277, 3, 1),
        (322, 3, 32), (323, 3, 32), (324, 4, 8 + 2 + 12 * 10 + 4), (325, 4, 1024)]
ifd = struct.pack('<H', len(tags)) + b''.join(struct.pack('<HHII', t, ty, 1, v) if ty == 4 else
                                              struct.pack('<HHIHH', t, ty, 1, v, 0) for t, ty, v in tags)
open('tiled.tif', 'wb').write(b'II*\0' + struct.pack('<I', 8) + ifd + struct.pack('<I', 0) + tile.tobytes())
Image.fromarray(np.zeros((1000, 1000), np.uint8)).save('blank.png', compress_level=9)
PYEOF

# Within 150 MB of address space: allocating the 10 GB image would fail with "out of memory".
# AddressSanitizer reserves terabytes of shadow memory, so there the space is left as it is.
if ldd "$B" 2>/dev/null | grep -q libasan; then cap=unlimited; else cap=150000; fi
capped() { (ulimit -v "$cap" && exec "$@"); }
expect 1 "45-byte PNG" capped "$B" run --device cpu -e grayscale huge.png out.png
says "45-byte PNG" "huge.png: image is 100000x100000 (10000000000 pixels), over the limit of 1073741824 pixels (--max-pixels raises it)"
expect 1 "45-byte PNG, pixels raised" capped "$B" run --device cpu --max-pixels 10000000000 -e grayscale huge.png out.png
says "45-byte PNG, pixels raised" "huge.png: image of 100000x100000 decodes to 10000000000 bytes, 222222223 times the file's 45 bytes, over the limit of 100000 times (--max-ratio raises it)"
expect 1 "45-byte PNG, all raised" capped "$B" run --device cpu --max-pixels 10000000000 --max-ratio 1000000000 -e grayscale huge.png out.png
says "45-byte PNG, all raised" "huge.png: truncated or corrupt PNG: not enough image data"
absent "45-byte PNG output" out.png
[ "$(grep -c . "$TMP/.stderr")" -le 2 ] && ok || bad "more than the device line and one error: $(cat "$TMP/.stderr")"

# expect_limit NAME OPTION LIMIT MESSAGE INPUT: refused at LIMIT-1 with MESSAGE, no output; at LIMIT, out.png written.
expect_limit() {
  local name=$1 option=$2 limit=$3 message=$4 input=$5
  rm -f out.png
  expect 1 "$name over" "$B" run --device cpu "$option" $((limit - 1)) -e transpose "$input" out.png
  says "$name over" "$input: $message"
  absent "$name over" out.png
  expect 0 "$name at the limit" "$B" run --device cpu "$option" "$limit" -e transpose "$input" out.png
}

scans=$("$PY" -c "import sys; print(open('prog.jpg', 'rb').read().count(b'\xff\xda'))")
[ "$scans" -gt 3 ] && ok || bad "prog.jpg has $scans scans"
expect_limit "JPEG scans" --max-jpeg-scans "$scans" \
  "JPEG has $scans scans or more, over the limit of $((scans - 1)) scans (--max-jpeg-scans raises it)" prog.jpg
"$PY" -c "
import numpy as np, cv2
want = cv2.cvtColor(cv2.imread('prog.jpg', cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB).transpose(1, 0, 2)
got = cv2.cvtColor(cv2.imread('out.png', cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
raise SystemExit(0 if got.shape == want.shape and np.array_equal(got, want) else 1)" && ok || bad "JPEG at the scan limit differs from OpenCV"

expect 0 "TIFF in strips" "$B" run --device cpu -e transpose strips.png strips.tif
strips=$("$PY" -c "from PIL import Image; print(len(Image.open('strips.tif').tag_v2[273]))")
[ "$strips" -gt 3 ] && ok || bad "strips.tif has $strips strips"
expect_limit "TIFF strips" --max-tiff-blocks "$strips" \
  "TIFF image is stored in $strips strips, over the limit of $((strips - 1)) strips or tiles (--max-tiff-blocks raises it)" strips.tif
"$PY" -c "
import numpy as np; from PIL import Image
raise SystemExit(0 if np.array_equal(np.asarray(Image.open('out.png')), np.asarray(Image.open('strips.png'))) else 1)" \
  && ok || bad "TIFF at the strip limit differs from its source"

expect_limit "TIFF tile bytes" --max-tiff-tile-bytes 1024 \
  "TIFF tiles of 32x32 decode to 1024 bytes each, more than the whole image (400 bytes) and over the limit of 1023 bytes (--max-tiff-tile-bytes raises it)" tiled.tif
"$PY" -c "
import numpy as np; from PIL import Image
raise SystemExit(0 if np.array_equal(np.asarray(Image.open('out.png')), np.load('tile.npy')[:20, :20].T) else 1)" \
  && ok || bad "TIFF at the tile limit differs from its tile"

size=$(stat -c %s blank.png)
times=$(( (1000000 + size - 1) / size ))
expect_limit "ratio" --max-ratio "$times" \
  "image of 1000x1000 decodes to 1000000 bytes, $times times the file's $size bytes, over the limit of $((times - 1)) times (--max-ratio raises it)" blank.png

# In a folder the refused file is reported and skipped, the rest go on.
mkdir -p in && cp huge.png blank.png in/
expect 1 "folder" "$B" run --device cpu -e grayscale in outdir
says "folder" "over the limit of 1073741824 pixels (--max-pixels raises it)"
exists "folder: the good file" outdir/blank.png
absent "folder: the refused file" outdir/huge.png

finish
