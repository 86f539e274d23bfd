# Streamed runs (--stream): TIFF read by strips and tiles, written by strips, PNG read by rows and
# JPEG by scanlines, both written in bands, byte-identical to the whole-image run (metadata too), by
# one band executor and by several workers; BigTIFF output read back by libtiff (OpenCV) and
# tifffile; a damaged strip
# in the middle fails with one line and no output; the memory limit, measured; a global stage
# that cannot fit refused before decoding; the old-size plugin in a streamed run; strips written
# out of order read by every reader as in order.
source "$(dirname "$0")/lib.bash"
B=$IMGPIPE_BIN
TP=${IMGPIPE_TEST_PLUGINS:?}

"$PY" - "$TMP" <<'PYEOF' || { echo "cannot make the inputs"; exit 1; }
import sys, numpy as np, tifffile
d = sys.argv[1]
rng = np.random.default_rng(11)
def noisy(h, w, c, dtype):
    top = 255 if dtype == np.uint8 else 65535
    base = np.linspace(0, top, w, dtype=np.float64)[None, :, None] * np.ones((h, 1, c))
    img = (base * 0.7 + rng.integers(0, top // 4, size=(h, w, c))).astype(dtype)
    return img[:, :, 0] if c == 1 else img
rgb = noisy(523, 389, 3, np.uint8)
tifffile.imwrite(f'{d}/striped.tif', rgb, compression='zlib', rowsperstrip=7, photometric='rgb')
tifffile.imwrite(f'{d}/tiled.tif', rgb, compression='zlib', tile=(64, 48), photometric='rgb')
tifffile.imwrite(f'{d}/tiled16.tif', noisy(301, 257, 1, np.uint16), compression='zlib', tile=(32, 32))
tifffile.imwrite(f'{d}/float.tif', rng.random((97, 131), dtype=np.float32), rowsperstrip=5)
# random pixels do not compress: deflate stores them, and a zeroed half of a strip cannot decode
tifffile.imwrite(f'{d}/big.tif', rng.integers(0, 256, size=(2048, 2048, 3), dtype=np.uint8), compression='zlib', rowsperstrip=16, photometric='rgb')
# a damaged strip in the middle of big.tif: its second half zeroed
page = tifffile.TiffFile(f'{d}/big.tif').pages[0]
k = len(page.dataoffsets) // 2
off, n = page.dataoffsets[k], page.databytecounts[k]
with open(f'{d}/big.tif', 'rb') as f: data = bytearray(f.read())
data[off + n // 2: off + n] = bytes(n - n // 2)
with open(f'{d}/damaged.tif', 'wb') as f: f.write(data)
PYEOF

# Byte-identical to the whole-image run, for every pipeline and input layout.
for input in striped tiled tiled16 float; do
  for pipe in "median radius=2 | convolve kernel=gaussian5" "mean radius=4 border=shrink | transpose | median radius=1" \
              "histogram out=$TMP/{stem}.csv | mean radius=3"; do
    expect 0 "$input whole: $pipe" "$B" run -q --stream off -e "$pipe" "$TMP/$input.tif" "$TMP/w.tif"
    [ -f "$TMP/$input.csv" ] && mv "$TMP/$input.csv" "$TMP/w.csv"
    expect 0 "$input streamed: $pipe" "$B" run -q --stream on --memory 4M -e "$pipe" "$TMP/$input.tif" "$TMP/s.tif"
    if cmp -s "$TMP/w.tif" "$TMP/s.tif"; then ok; else bad "$input: '$pipe' streamed differs from the whole-image run"; fi
    if [ -f "$TMP/w.csv" ]; then
      if cmp -s "$TMP/w.csv" "$TMP/$input.csv"; then ok; else bad "$input: streamed histogram differs"; fi
      rm -f "$TMP/w.csv" "$TMP/$input.csv"
    fi
  done
done

# One image's rows dealt to 2 and 3 workers (threads here; GPUs under --gpus): the same bytes, the
# histogram's counts merged to the whole image's.
for input in striped tiled16; do
  pipe="median radius=2 | histogram out=$TMP/{stem}.csv | mean radius=9 | transpose | median radius=1"
  expect 0 "$input whole, for workers" "$B" run -q --stream off -e "$pipe" "$TMP/$input.tif" "$TMP/w.tif"
  mv "$TMP/$input.csv" "$TMP/w.csv"
  for n in 2 3; do
    expect 0 "$input, $n workers" env IMGPIPE_STREAM_CPU_WORKERS=$n "$B" run --stream on --memory 5M -e "$pipe" \
      "$TMP/$input.tif" "$TMP/s.tif"
    says "$input, $n workers said" "$n workers"
    if cmp -s "$TMP/w.tif" "$TMP/s.tif"; then ok; else bad "$input: $n workers differ from the whole-image run"; fi
    if cmp -s "$TMP/w.csv" "$TMP/$input.csv"; then ok; else bad "$input: $n workers' histogram differs"; fi
  done
done

# A streamed run says so; the profile has the steps and the overlap.
expect 0 "streamed profile" "$B" run --stream on --profile -e "grayscale | median" "$TMP/striped.tif" "$TMP/p.tif"
says "streamed device line" "streamed in bands"
says "profile decode" "decode"
says "profile overlap" "overlap"
says "profile threads" "decode and encode on threads of their own"
says "profile waits" "waiting for decoded bands"
expect 0 "streamed profile, 2 workers" env IMGPIPE_STREAM_CPU_WORKERS=2 "$B" run --stream on --memory 5M --profile \
  -e "grayscale | median" "$TMP/striped.tif" "$TMP/p.tif"
says "profile workers' busy" "worker 1 "
says "profile chunks' threads" "chunks' threads"
says "profile chunks' waits" "filling waited for a free slot"

# PNG and JPEG in and out, with metadata (ICC profile, text, resolution, EXIF): the same bytes as
# the whole-image run; an interlaced PNG is read whole, and says so.
"$PY" - "$TMP" <<'PYEOF' || { echo "cannot make the PNG and JPEG inputs"; exit 1; }
import sys, numpy as np
from PIL import Image, PngImagePlugin, ImageCms
d = sys.argv[1]
rng = np.random.default_rng(12)
rgb = (np.linspace(0, 180, 389)[None, :, None] * np.ones((523, 1, 3)) + rng.integers(0, 60, (523, 389, 3))).astype(np.uint8)
icc = ImageCms.ImageCmsProfile(ImageCms.createProfile('sRGB')).tobytes()
info = PngImagePlugin.PngInfo()
info.add_text('Comment', 'streamed')
Image.fromarray(rgb).save(f'{d}/meta.png', dpi=(300, 300), pnginfo=info, icc_profile=icc)
Image.fromarray(rgb[:, :, 0].astype(np.uint16) * 257 + rng.integers(0, 200, (523, 389)).astype(np.uint16)).save(f'{d}/gray16.png')
Image.fromarray(rgb[:, :, 1]).convert('P', palette=Image.ADAPTIVE, colors=16).save(f'{d}/palette.png')
# Pillow writes no interlaced PNG: Adam7 by hand, every row unfiltered
import struct, zlib
def chunk(kind, data): return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
raw = b''.join(b'\0' + row.tobytes() for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
               (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)) for row in rgb[y0::dy, x0::dx] if row.size)
with open(f'{d}/interlaced.png', 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 389, 523, 8, 2, 0, 0, 1)) +
            chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
exif = Image.Exif(); exif[0x0112] = 1; exif[0x010F] = 'imgpipe'
Image.fromarray(rgb).save(f'{d}/meta.jpg', quality=88, dpi=(72, 72), exif=exif, icc_profile=icc)
exif[0x0112] = 6
Image.fromarray(rgb).save(f'{d}/turned.jpg', quality=88, exif=exif)
Image.fromarray(rgb).save(f'{d}/progressive.jpg', quality=80, progressive=True, subsampling=2)
Image.fromarray(rgb).convert('CMYK').save(f'{d}/cmyk.jpg', quality=90)
big = rng.integers(0, 256, size=(2048, 2048, 3), dtype=np.uint8)
Image.fromarray(big).save(f'{d}/big.png')
Image.fromarray(big).save(f'{d}/big.jpg', quality=90)
PYEOF
for input in meta.png gray16.png palette.png interlaced.png meta.jpg progressive.jpg cmyk.jpg; do
  outs="png jpg"; [ "$input" = gray16.png ] && outs=png
  for out in $outs; do
    for pipe in "median radius=2 | convolve kernel=gaussian5" "mean radius=3 | transpose"; do
      expect 0 "$input whole: $pipe" "$B" run -q --stream off -e "$pipe" "$TMP/$input" "$TMP/w.$out"
      expect 0 "$input streamed: $pipe" "$B" run --stream on --memory 6M -e "$pipe" "$TMP/$input" "$TMP/s.$out"
      if [ "$input" = interlaced.png ]; then says "interlaced read whole" "not streamed: this PNG is not streamed (interlaced)"
      else says "$input streamed" "streamed in bands"; fi
      if cmp -s "$TMP/w.$out" "$TMP/s.$out"; then ok; else bad "$input -> $out: '$pipe' streamed differs from the whole-image run"; fi
    done
  done
done

# An image its EXIF orientation turns is read whole (turned), and says so; --no-autorotate streams it.
expect 0 "turned whole" "$B" run -q --stream off -e "median" "$TMP/turned.jpg" "$TMP/tw.png"
expect 0 "turned streamed" "$B" run --stream on -e "median" "$TMP/turned.jpg" "$TMP/ts.png"
says "turned not streamed" "not streamed: its EXIF orientation turns it"
if cmp -s "$TMP/tw.png" "$TMP/ts.png"; then ok; else bad "turned JPEG: --stream on differs from the whole-image run"; fi
expect 0 "unturned streamed" "$B" run --stream on --no-autorotate -e "median" "$TMP/turned.jpg" "$TMP/tu.png"
says "unturned streamed" "streamed in bands"

# BigTIFF when the output passes the threshold, read back by libtiff (through OpenCV) and tifffile.
expect 0 "bigtiff whole" "$B" run -q --stream off -e "median" "$TMP/tiled.tif" "$TMP/classic.tif"
expect 0 "bigtiff streamed" "$B" run -q --stream on --bigtiff-above 1K -e "median" "$TMP/tiled.tif" "$TMP/bt.tif"
if "$PY" - "$TMP/classic.tif" "$TMP/bt.tif" <<'PYEOF'
import sys, cv2, numpy as np, tifffile
classic, big = sys.argv[1], sys.argv[2]
with open(big, 'rb') as f: head = f.read(4)
assert head in (b'II+\x00', b'MM\x00+'), f'not BigTIFF: {head!r}'
assert tifffile.TiffFile(big).is_bigtiff
a, b = cv2.imread(classic, cv2.IMREAD_UNCHANGED), cv2.imread(big, cv2.IMREAD_UNCHANGED)
assert a is not None and b is not None, 'libtiff could not read one of them'
assert np.array_equal(a, b), 'BigTIFF pixels differ from the classic file'
assert np.array_equal(tifffile.imread(big), tifffile.imread(classic))
PYEOF
then ok; else bad "BigTIFF output not read back equal"; fi

# A damaged strip in the middle: one line, exit 1, no output and no temporary left.
mkdir -p "$TMP/out"
expect 1 "damaged strip" "$B" run -q --stream on -e "median" "$TMP/damaged.tif" "$TMP/out/d.tif"
says "damaged strip message" "truncated or corrupt TIFF"
if [ "$(wc -l < "$TMP/.stderr")" -eq 1 ]; then ok; else bad "damaged strip: $(wc -l < "$TMP/.stderr") lines of errors"; fi
absent "damaged strip output" "$TMP/out/d.tif"
no_temporaries "damaged strip" "$TMP/out"
says "damaged strip names the input" "$TMP/damaged.tif:"

# An output that cannot be made (its folder missing): the writer is made beside the first bands,
# and the run fails in one line naming the output, not the input, for each streamed writer.
for out in tif png jpg; do
  expect 1 "no output folder ($out)" "$B" run -q --stream on --memory 4M -e "median" "$TMP/striped.tif" "$TMP/nowhere/o.$out"
  says "no output folder ($out) names it" "$TMP/nowhere/o.$out: cannot create a file in the output folder"
  if [ "$(wc -l < "$TMP/.stderr")" -eq 1 ]; then ok; else bad "no output folder ($out): $(wc -l < "$TMP/.stderr") lines of errors"; fi
done

# The encoder failing on its thread (a file size limit: writes fail with EFBIG): one line, exit 1,
# no output and no temporary left, though the decoder and the stages had bands in flight.
mkdir -p "$TMP/full"
expect 1 "encoder failure" bash -c "trap '' XFSZ; ulimit -f 200; exec \"\$0\" \"\$@\"" "$B" run -q --stream on \
  --memory 8M "$SRC/pipelines/denoise.pipe" "$TMP/big.tif" "$TMP/full/o.tif"
says "encoder failure message" "cannot write TIFF"
if [ "$(wc -l < "$TMP/.stderr")" -eq 1 ]; then ok; else bad "encoder failure: $(wc -l < "$TMP/.stderr") lines of errors"; fi
absent "encoder failure output" "$TMP/full/o.tif"
no_temporaries "encoder failure" "$TMP/full"

# Ctrl-C as before the decoding and encoding threads: the run ends at once, killed by SIGINT
# (which the helpers leave to the main thread), with no finished output.
if "$PY" - "$B" "$TMP" <<'PYEOF'
import os, signal, subprocess, sys, time, numpy as np, tifffile
b, d = sys.argv[1], sys.argv[2]
tifffile.imwrite(f'{d}/slow.tif', np.random.default_rng(3).integers(0, 256, (3000, 3000, 3), dtype=np.uint8),
                 rowsperstrip=64, photometric='rgb')
os.makedirs(f'{d}/ctrlc', exist_ok=True)   # a killed run leaves its temporary file: kept apart
out = f'{d}/ctrlc/slow.tif'
# heavier pipelines until one is still running when the signal comes (a machine with many cores)
for radius in (7, 20, 60):
    p = subprocess.Popen([b, 'run', '-q', '--stream', 'on', '--memory', '16M', '-e',
                          f'median radius={radius} | median radius={radius}', f'{d}/slow.tif', out], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    if p.poll() is None: break
    os.remove(out)
assert p.poll() is None, f'the run ended before the signal ({p.returncode})'
p.send_signal(signal.SIGINT)
t0 = time.monotonic()
rc = p.wait(timeout=30)
assert rc == -signal.SIGINT, f'exit {rc}, not killed by SIGINT'
assert time.monotonic() - t0 < 2, f'took {time.monotonic() - t0:.1f} s to end'
assert not os.path.exists(out), 'an output was left'
PYEOF
then ok; else bad "Ctrl-C on a streamed run"; fi

# The memory limit, measured: 2048x2048 RGB (12 MiB) through denoise within --memory 8M.
# The limit bounds what the run allocates, on top of what the program and its libraries take, measured
# as the peak of the same streamed run on a small image (under ASan freed memory is not held back).
# The allowance over a small image's run: the limit itself; under AddressSanitizer (its shadow
# memory and redzones grow with what is allocated) a half more.
allow_kb=$((8 * 1024))
[ -n "${ASAN_OPTIONS:-}" ] && allow_kb=$((12 * 1024))
peak_kb() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0" /usr/bin/time -f "%M" -o "$TMP/rss" "$@"
  tail -1 "$TMP/rss"
}
# within_limit SMALL BIG EXT: BIG streamed within --memory 8M peaks no higher than SMALL streamed
# plus the allowance, below BIG whole, with the whole run's bytes.
within_limit() {
  local small=$1 big=$2 ext=$3 base_kb rss_kb rss0_kb
  base_kb=$(peak_kb "$B" run -q --stream on --memory 8M "$SRC/pipelines/denoise.pipe" "$small" "$TMP/m1.$ext")
  rss_kb=$(peak_kb "$B" run -q --stream on --memory 8M "$SRC/pipelines/denoise.pipe" "$big" "$TMP/m.$ext")
  rss0_kb=$(peak_kb "$B" run -q --stream off "$SRC/pipelines/denoise.pipe" "$big" "$TMP/m0.$ext")
  if [ "$rss_kb" -le $((base_kb + allow_kb)) ] && [ "$rss_kb" -lt "$rss0_kb" ]; then ok
  else bad "$ext --memory 8M: peak RSS $rss_kb KB, $base_kb KB for a small image (whole-image run: $rss0_kb KB)"; fi
  if cmp -s "$TMP/m.$ext" "$TMP/m0.$ext"; then ok; else bad "$ext --memory 8M output differs"; fi
}
# TIFF, and PNG and JPEG in and out: 2048x2048 RGB through denoise within --memory 8M.
if [ -x /usr/bin/time ]; then
  within_limit "$TMP/float.tif" "$TMP/big.tif" tif
  for ext in png jpg; do within_limit "$TMP/meta.$ext" "$TMP/big.$ext" "$ext"; done
fi

# A PNG cut in the middle of its image data: one line, exit 1, no output and no temporary left;
# a JPEG cut so: decoded with a warning (libjpeg fills the rest), as whole, and refused under
# --fail-on warning.
head -c 6000000 "$TMP/big.png" > "$TMP/cut.png"
head -c 1800000 "$TMP/big.jpg" > "$TMP/cut.jpg"
expect 1 "cut PNG" "$B" run -q --stream on --memory 8M -e "median" "$TMP/cut.png" "$TMP/out/c.png"
says "cut PNG message" "truncated or corrupt PNG"
if [ "$(wc -l < "$TMP/.stderr")" -eq 1 ]; then ok; else bad "cut PNG: $(wc -l < "$TMP/.stderr") lines of errors"; fi
absent "cut PNG output" "$TMP/out/c.png"
no_temporaries "cut PNG" "$TMP/out"
expect 0 "cut JPEG streamed" "$B" run --stream on --memory 8M -e "median" "$TMP/cut.jpg" "$TMP/out/cj.jpg"
says "cut JPEG warns" "Premature end of JPEG file"
expect 0 "cut JPEG whole" "$B" run -q --stream off -e "median" "$TMP/cut.jpg" "$TMP/out/cj0.jpg"
if cmp -s "$TMP/out/cj.jpg" "$TMP/out/cj0.jpg"; then ok; else bad "cut JPEG: streamed differs from whole"; fi
rm -f "$TMP/out/cj.jpg" "$TMP/out/cj0.jpg"
expect 1 "cut JPEG --fail-on warning" "$B" run -q --fail-on warning --stream on --memory 8M -e "median" "$TMP/cut.jpg" "$TMP/out/cf.png"
says "cut JPEG refused" "Premature end of JPEG file (refused: --fail-on warning)"
if [ "$(wc -l < "$TMP/.stderr")" -eq 1 ]; then ok; else bad "cut JPEG: $(wc -l < "$TMP/.stderr") lines of errors"; fi
absent "cut JPEG output" "$TMP/out/cf.png"
no_temporaries "cut JPEG" "$TMP/out"

# Tiles far taller than the image (a fuzzer's find): the band holds the image's rows, not the
# tile's, so a small --memory still streams it, with the whole run's bytes.
"$PY" -c "import numpy as np, tifffile; tifffile.imwrite('$TMP/talltile.tif', np.random.default_rng(5).integers(0, 256, (37, 1000), dtype=np.uint8), tile=(16384, 16))" \
  || bad "cannot write the tall-tile TIFF"
expect 0 "tall tiles streamed" "$B" run -q --stream on --memory 4M -e "median" "$TMP/talltile.tif" "$TMP/tt_s.tif"
expect 0 "tall tiles whole" "$B" run -q --stream off -e "median" "$TMP/talltile.tif" "$TMP/tt_w.tif"
cmp -s "$TMP/tt_s.tif" "$TMP/tt_w.tif" && ok || bad "tall tiles: streamed differs from whole"

# A global stage that cannot fit: refused before decoding, naming the stage and what it needs.
expect 2 "global too large" "$B" run -q --stream on --memory 8M -e "median | transpose" "$TMP/damaged.tif" "$TMP/out/g.tif"
says "global too large names the stage" "stage 'transpose' (line 1) needs the whole image: 24 MiB of memory"
absent "global too large output" "$TMP/out/g.tif"
# auto streams an image that does not fit whole
expect 0 "auto streams" "$B" run --memory 8M "$SRC/pipelines/denoise.pipe" "$TMP/big.tif" "$TMP/a.tif"
says "auto streamed" "streamed in bands"
expect 0 "auto whole" "$B" run "$SRC/pipelines/denoise.pipe" "$TMP/striped.tif" "$TMP/a2.tif"
if grep -q "streamed" "$TMP/.stderr"; then bad "a small image was streamed under auto"; else ok; fi

# A plugin built before stage classes: global in a streamed run (it marks the height it saw).
expect 0 "old plugin listed" "$B" plugins --plugin-path "$TP/oldsize" oldinvert
if grep -q "class: global" "$TMP/.stdout"; then ok; else bad "old plugin's class not shown as global"; fi
expect 0 "old plugin streamed" "$B" run -q --stream on --plugin-path "$TP/oldsize" -e "grayscale | oldinvert | median" \
  "$TMP/striped.tif" "$TMP/old_s.tif"
expect 0 "old plugin whole" "$B" run -q --stream off --plugin-path "$TP/oldsize" -e "grayscale | oldinvert | median" \
  "$TMP/striped.tif" "$TMP/old_w.tif"
if cmp -s "$TMP/old_s.tif" "$TMP/old_w.tif"; then ok; else bad "old plugin: streamed differs from whole"; fi

# Strips out of order in the file, as a streamed GPU run writes them beside the cores: Pillow,
# tifffile and imgpipe read them as the same image written in order.
"${IMGPIPE_TIFF_ANY_ORDER_WRITE:?}" "$TMP/any_order.tif" "$TMP/in_order.tif" >"$TMP/.stdout" 2>&1
case $? in
  0)
    "$PY" "$SRC/tests/e2e/readers_agree.py" "$TMP/any_order.tif" "$TMP/in_order.tif" && ok ||
      bad "strips out of order: the readers read another image"
    expect 0 "strips out of order read" "$B" run -q --device cpu -e "transpose | transpose" "$TMP/any_order.tif" "$TMP/ao.tif"
    expect 0 "strips in order read" "$B" run -q --device cpu -e "transpose | transpose" "$TMP/in_order.tif" "$TMP/io.tif"
    cmp -s "$TMP/ao.tif" "$TMP/io.tif" && ok || bad "strips out of order: imgpipe read another image" ;;
  77) echo "strips out of order not checked: $(cat "$TMP/.stdout")" ;;
  *) bad "tiff_any_order_write failed: $(cat "$TMP/.stdout")" ;;
esac
finish
