# Every stage and the ready pipelines through the command line on the GPU and on the CPU:
# integer outputs identical, float outputs within 1e-5. Skips (77) without a GPU.
. "$(dirname "$0")/lib.bash"
B=$IMGPIPE_BIN
cd "$TMP"
require_gpu

# Odd sizes and depths made here: prime width, 16-bit and float, 1..4 channels.
$PY - <<'PYEOF' || { echo "cannot make test images"; exit 1; }
import cv2, numpy as np, os
r = np.random.default_rng(7)
cv2.imwrite("rgb_odd.png", r.integers(0, 256, (3001, 4097, 3), dtype=np.uint8))
cv2.imwrite("gray_odd.png", r.integers(0, 256, (61, 101), dtype=np.uint8))
cv2.imwrite("gray16.png", r.integers(0, 65536, (257, 263), dtype=np.uint16))
cv2.imwrite("rgba16.png", r.integers(0, 65536, (97, 131, 4), dtype=np.uint16))
cv2.imwrite("tiny.png", r.integers(0, 256, (1, 1), dtype=np.uint8))
cv2.imwrite("row.png", r.integers(0, 256, (1, 333, 3), dtype=np.uint8))
cv2.imwrite("float.tif", r.random((211, 173), dtype=np.float32))
cv2.imwrite("levels16.png", r.integers(0, 16, (523, 491), dtype=np.uint8))
cam = cv2.imread(os.environ["IMGPIPE_SAMPLES"] + "/camera.png", cv2.IMREAD_GRAYSCALE)
cv2.imwrite("big_gray.tif", np.tile(cam, (16, 16)))
PYEOF

# Pairs are compared all at once at the end (one Python start instead of hundreds).
same() { echo "$2|$3|$4|$1" >> pairs.txt; }

compare_pairs() {
  [ -s pairs.txt ] || { bad "no GPU and CPU pairs were made"; return; }
  verdicts "GPU and CPU pairs" <<'PYEOF'
import cv2, numpy as np
for line in open("pairs.txt"):
    a_path, b_path, tol, what = line.rstrip("\n").split("|", 3)
    a = cv2.imread(a_path, cv2.IMREAD_UNCHANGED); b = cv2.imread(b_path, cv2.IMREAD_UNCHANGED)
    if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
        print("FAIL", what, "shape or type"); continue
    d = np.abs(a.astype(np.float64) - b.astype(np.float64)).max() if a.size else 0.0
    print("ok" if d <= float(tol) else "FAIL", what, "max difference", d)
PYEOF
}

# Every pair is a job; the jobs run in parallel (the GPU is shared by the processes) and are
# compared at the end.
n=0
both() {  # both "pipeline text" input tolerance [extra options]
  local text=$1 in=$2 tol=$3; shift 3
  n=$((n + 1))
  printf '%s\0%s\0%s\0%s\0%s\0' "$n" gpu "$text" "$in" "$*" >> jobs.bin
  printf '%s\0%s\0%s\0%s\0%s\0' "$n" cpu "$text" "$in" "$*" >> jobs.bin
  same "$text on $in $*" "g$n.tif" "c$n.tif" "$tol"
}

run_job() {  # id device text input extra
  local prefix=${2:0:1}
  # shellcheck disable=SC2086
  "$B" run -q --device "$2" $5 -e "$3" "$4" "$prefix$1.tif" 2>"$prefix$1.err" || echo "$2 failed: $3 on $4: $(head -c 300 "$prefix$1.err")"
}
export -f run_job
export B

# float_kernel K: a direct (not separable) K x K float kernel, w(i, j) = ((2 t) % 5 - 1) 0.073 + 0.011 (t % 3), t = K i + j
float_kernel() {
  awk -v k="$1" 'BEGIN { for (i = 0; i < k; i++) for (j = 0; j < k; j++) { t = k * i + j
    printf "%s%.3f", j ? " " : (i ? "; " : ""), ((2 * t) % 5 - 1) * 0.073 + 0.011 * (t % 3) } }'
}
FLOAT5=$(float_kernel 5)
FLOAT7=$(float_kernel 7)
for in in "$IMAGES/astronaut.png" rgb_odd.png row.png rgba16.png; do
  both "grayscale" "$in" 0
done
for in in "$IMAGES/camera.png" rgb_odd.png gray16.png rgba16.png tiny.png row.png float.tif; do
  both "transpose" "$in" 0
  if [ "$in" = rgb_odd.png ]; then   # the large image: the fast paths once each, not every variant
    both "median radius=1" "$in" 0
    both "mean radius=1" "$in" 1e-5
    both "mean radius=15" "$in" 1e-5
    both "convolve kernel=gaussian3" "$in" 1e-5
    both "convolve kernel=sharpen output=f32" "$in" 1e-5
    continue
  fi
  for border in replicate reflect101 zero shrink; do
    both "median radius=1 border=$border" "$in" 0
    both "mean radius=2 border=$border" "$in" 1e-5
    both "convolve kernel=gaussian5 border=$border" "$in" 1e-5
  done
  for r in 2 3 7 15; do both "median radius=$r" "$in" 0; done
  for r in 1 3 15; do both "mean radius=$r" "$in" 1e-5; done
  for k in box3 gaussian3 sharpen laplacian sobel-x emboss "0.1 0.2 0.1; 0.2 -1.3 0.2; 0.1 0.2 0.1"; do
    both "convolve kernel=\"$k\"" "$in" 1e-5
    both "convolve kernel=\"$k\" output=f32" "$in" 1e-5
  done
  # float 5x5 and 7x7 (on one-channel 8-bit images the tensor-core kernel, certified against the CPU's order)
  both "convolve kernel=\"$FLOAT5\"" "$in" 1e-5
  both "convolve kernel=\"$FLOAT7\" divisor=1.3 offset=7.5 border=zero" "$in" 1e-5
done
for in in "$IMAGES/camera.png" gray_odd.png gray16.png levels16.png tiny.png; do
  both "entropy levels=65536 bins=16" "$in" 1e-5
  both "entropy radius=2 levels=65536 bins=256 base=2" "$in" 1e-5
  both "entropy levels=65536 output=u8" "$in" 0
done
both "entropy radius=2 levels=16 bins=16" levels16.png 1e-5
# points fused into entropy on the GPU (entropy.pipe below is one such run too)
both "grayscale | entropy radius=3 bins=8 base=2" rgb_odd.png 1e-5
both "grayscale | entropy radius=1 bins=16 output=u8" row.png 0
both "grayscale | entropy radius=2 levels=65536 bins=13 base=10" tiny.png 1e-5
for p in denoise edges entropy; do
  both "$(grep -v '^#' "$SRC/pipelines/$p.pipe" | sed 's/#.*//' | paste -sd'|')" "$IMAGES/astronaut.png" 1e-5
  both "$(grep -v '^#' "$SRC/pipelines/$p.pipe" | sed 's/#.*//' | paste -sd'|')" rgb_odd.png 1e-5 --transfer zerocopy
done

# a stage without a GPU path: one round trip, said once, same result as the CPU
TP=${IMGPIPE_TEST_PLUGINS:?}
expect 0 "gpu: stage without a GPU path" "$B" run --device gpu --plugin-path "$TP/good" -e "grayscale | invert | transpose" "$IMAGES/astronaut.png" rt-g.png
says "round trip said" "stage 'invert' has no GPU path: it runs on the CPU, costing one round trip"
[ "$(grep -c "has no GPU path" "$TMP/.stderr")" -eq 1 ] && ok || bad "the round trip must be said once"
expect 0 "cpu: stage without a GPU path" "$B" run --device cpu --plugin-path "$TP/good" -e "grayscale | invert | transpose" "$IMAGES/astronaut.png" rt-c.png
same_image rt-g.png rt-c.png && ok || bad "round-trip result differs from the CPU's"
# a stage failing on the GPU path: one line naming it, no output
expect 1 "gpu: failing stage" "$B" run --device gpu --plugin-path "$TP/failing" -e "grayscale | failing" "$IMAGES/astronaut.png" f.png
says "gpu: failing stage named" "stage 'failing' (line 1) failed: deliberate failure (test plugin)"
absent "gpu: failing stage output" f.png

# Run-time fusion (NVRTC): fused output equal to --no-fuse's byte for byte, the first run compiles
# (said under --profile), the second loads from the disk cache; folders of small images too.
export XDG_CACHE_HOME="$TMP/xdg-cache"
$PY - <<'PYEOF' || bad "cannot make fusion test images"
import cv2, numpy as np, os
r = np.random.default_rng(11)
cv2.imwrite("rgba_odd.png", r.integers(0, 256, (29, 37, 4), dtype=np.uint8))
cv2.imwrite("col.png", r.integers(0, 256, (211, 1, 3), dtype=np.uint8))
os.makedirs("smalls", exist_ok=True)
for i in range(40):
    cv2.imwrite("smalls/s%02d.png" % i, r.integers(0, 256, (96, 128, 3), dtype=np.uint8))
PYEOF
PT="$TP/point"
expect 0 "fusion: first run" "$B" run --device gpu --profile -e "grayscale | median" "$IMAGES/astronaut.png" fz1.png
if grep -qF "fusion off" "$TMP/.stderr"; then
  echo "fusion checks skipped: $(grep -F "fusion off" "$TMP/.stderr" | head -n 1)"
else
  says "fusion: first run compiles beside decoding" "fusion compile"
  says "fusion: first run compiles and caches" "1 fused kernel compiled by NVRTC, cached"
  says "fusion: profile names the fused stages" "grayscale (gpu, fused)"
  expect 0 "fusion: second run" "$B" run --device gpu --profile -e "grayscale | median" "$IMAGES/astronaut.png" fz2.png
  says "fusion: second run uses the cache" "fusion: grayscale+median loaded from the disk cache"
  if grep -qF "compiled by NVRTC" "$TMP/.stderr"; then bad "fusion: the second run compiled again"; else ok; fi
  same_image fz1.png fz2.png && ok || bad "fusion: cached kernel gave another result"
  expect 0 "fusion: mean is fused" "$B" run --device gpu --profile -e "grayscale | mean" "$IMAGES/astronaut.png" fm.png
  says "fusion: mean's fused stages named" "grayscale (gpu, fused)"
  expect 0 "fusion: fractional convolve is not fused" "$B" run --device gpu --profile -e "grayscale | convolve kernel=\"0.25 0.5 0.25\"" "$IMAGES/astronaut.png" fc.png
  if grep -qF "gpu, fused" "$TMP/.stderr"; then bad "fusion: a convolve of fractional weights was fused"; else ok; fi
  expect 0 "fusion: a 3x3 the vec kernel takes is not fused" "$B" run --device gpu --profile -e "grayscale | convolve kernel=gaussian3" "$IMAGES/astronaut.png" fv.png
  if grep -qF "gpu, fused" "$TMP/.stderr"; then bad "fusion: gaussian3 was fused, the vec kernel is faster apart"; else ok; fi
  for chain in "grayscale | median" "grayscale | median border=reflect101" "grayscale | median border=zero" \
               "grayscale | pointinv | median" "grayscale | pointinv" "pointinv | pointinv" \
               "grayscale | median | grayscale | median" "pointinv | grayscale | pointinv | median border=zero" \
               "grayscale | pointinv | mean border=shrink" "pointinv | pointinv | mean radius=3 border=replicate" \
               "grayscale | mean radius=15 border=zero" "grayscale | convolve kernel=\"2 8 12 8 2; 8 32 48 32 8; 12 48 73 48 12; 8 32 48 32 8; 2 8 12 8 2\" divisor=512" \
               "grayscale | pointinv | convolve kernel=\"-100 0 100; -200 1 200; -100 0 100\" offset=128 border=replicate"; do
    for in in "$IMAGES/astronaut.png" rgb_odd.png row.png col.png tiny.png gray_odd.png rgba_odd.png; do
      for tr in copy zerocopy; do
        f="fz-$(echo "$chain $in $tr" | md5sum | cut -c1-8)"
        "$B" run -q --device gpu --transfer $tr --plugin-path "$PT" -e "$chain" "$in" "$f-f.png" 2>"$f.err" || bad "fused run failed: $chain on $in: $(head -c 300 "$f.err")"
        "$B" run -q --device gpu --transfer $tr --no-fuse --plugin-path "$PT" -e "$chain" "$in" "$f-u.png" 2>"$f.err" || bad "unfused run failed: $chain on $in"
        same_image "$f-f.png" "$f-u.png" && ok || bad "fused differs from --no-fuse: $chain on $in ($tr)"
      done
    done
  done
  expect 0 "fusion: folder of small images (graph replays)" "$B" run --device gpu --jobs 2 -e "grayscale | median" --format png smalls sfz
  expect 0 "fusion: folder, --no-fuse" "$B" run --device gpu --jobs 2 --no-fuse -e "grayscale | median" --format png smalls snf
  diff -r sfz snf >/dev/null && ok || bad "folder: fused and graphed outputs differ from --no-fuse"
fi
expect 0 "--no-fuse says nothing of fusion" "$B" run --device gpu --profile --no-fuse -e "grayscale | median" "$IMAGES/astronaut.png" nf.png
if grep -qF "fusion" "$TMP/.stderr"; then bad "--no-fuse printed a fusion note"; else ok; fi
expect 0 "fusion without NVRTC: unfused" env IMGPIPE_NVRTC=/nonexistent/libnvrtc.so "$B" run --device gpu --profile -e "grayscale | median" "$IMAGES/astronaut.png" nn.png
says "fusion without NVRTC: said under --profile" "fusion off, stages run unfused: NVRTC not found"
[ "$(grep -c "fusion off" "$TMP/.stderr")" -eq 1 ] && ok || bad "fusion off must be said once"
same_image nn.png nf.png && ok || bad "without NVRTC the output differs from --no-fuse's"

# a value >= levels is an error on both
expect 1 "gpu: entropy value out of range" "$B" run --device gpu -e "entropy levels=256" gray16.png bad.tif
says "gpu: entropy value out of range" "is >= levels=256"
expect 1 "cpu: entropy value out of range" "$B" run --device cpu -e "entropy levels=256" gray16.png bad.tif
says "cpu: entropy value out of range" "is >= levels=256"

# histogram counts on the GPU equal the CPU's
for in in "$IMAGES/astronaut.png" rgba16.png float.tif; do
  expect 0 "gpu histogram $in" "$B" run -q --device gpu -e "histogram bins=64 out=g.csv" "$in" hg.tif
  expect 0 "cpu histogram $in" "$B" run -q --device cpu -e "histogram bins=64 out=c.csv" "$in" hc.tif
  cmp -s g.csv c.csv && ok || bad "histogram counts differ on $in"
done

# points fused into histogram on the GPU: the CSV and the passed-on image equal the CPU's
for in in "$IMAGES/astronaut.png" rgb_odd.png row.png tiny.png; do
  expect 0 "gpu fused grayscale+histogram $in" "$B" run -q --device gpu -e "grayscale | histogram bins=37 out=g.csv" "$in" hg.png
  expect 0 "cpu grayscale+histogram $in" "$B" run -q --device cpu -e "grayscale | histogram bins=37 out=c.csv" "$in" hc.png
  cmp -s g.csv c.csv && ok || bad "fused histogram counts differ from the CPU's on $in"
  same_image hg.png hc.png && ok || bad "fused histogram's passed-on image differs from the CPU's on $in"
done

jobs=$(nproc 2>/dev/null || echo 2)
xargs -0 -n 5 -P "$jobs" bash -c 'run_job "$@"' _ < jobs.bin > job-failures.txt
if [ -s job-failures.txt ]; then bad "runs failed: $(head -c 2000 job-failures.txt)"; else ok; fi

compare_pairs

# auto: a small image stays on the CPU (no GPU start-up), heavy work on a large one goes to the GPU
heavy="median radius=15 | median radius=15 | median radius=15 | median radius=15 | median radius=15 | median radius=15"
expect 0 "auto, small image" "$B" run --device auto -e "grayscale | median | convolve" "$IMAGES/camera.png" auto_small.png
says "auto, small image" "device: CPU"
says "auto, small image, why" "the CPU is estimated faster"
expect 0 "auto, heavy work on a large image" "$B" run --device auto --profile -e "$heavy" big_gray.tif auto_big.tif
says "auto, heavy work on a large image" "device: GPU 0"
says "auto, start-up beside decoding" "gpu start-up"
"$B" run -q --device cpu -e "$heavy" big_gray.tif cpu_big.tif
if same_image auto_big.tif cpu_big.tif; then ok; else bad "auto on the GPU and the CPU wrote different files"; fi
# auto for folders: light work on small images stays on the CPU, heavy work on large ones takes the GPU
mkdir -p fold_light fold_heavy
cp "$IMAGES/camera.png" "$IMAGES/coffee.png" fold_light/
for i in 1 2 3 4; do cp big_gray.tif fold_heavy/g$i.tif; done
expect 0 "auto, folder of light work" "$B" run --device auto -e "grayscale | median" fold_light fold_light_out
says "auto, folder of light work" "(auto: the stages of 2 images"
expect 0 "auto, folder of heavy work" "$B" run --device auto -e "$heavy" fold_heavy fold_heavy_out
says "auto, folder of heavy work" "device: GPU 0"
same_image fold_heavy_out/g1.tif cpu_big.tif && ok || bad "auto folder on the GPU differs from the CPU"

# The GPU codecs (nvCOMP): TIFF and PNG compressed on the card hold the CPU's pixels, a deflate TIFF
# written on the card decodes on the card, and --codecs cpu keeps every byte of the CPU's file.
# (--codecs gpu: TIFF compressed on the card too; --png-level 3: PNG deflated there)
for ext in tif png; do
  expect 0 "gpu codecs, $ext" "$B" run -v --device gpu --codecs gpu --png-level 3 -e "median radius=2" big_gray.tif "gc_g.$ext"
  "$B" run -q --device cpu --png-level 3 -e "median radius=2" big_gray.tif "gc_c.$ext"
  same_image "gc_g.$ext" "gc_c.$ext" && ok || bad "GPU codecs: the $ext output's pixels differ from the CPU's"
  cmp -s "gc_g.$ext" "gc_c.$ext" && bad "GPU codecs: the $ext file is the CPU's bytes (was it written on the card?)" || ok
  expect 0 "--codecs cpu, $ext" "$B" run -q --device gpu --codecs cpu --png-level 3 -e "median radius=2" big_gray.tif "gc_k.$ext"
  cmp -s "gc_k.$ext" "gc_c.$ext" && ok || bad "--codecs cpu: the $ext file differs from --device cpu's"
done
# Other readers of the files written on the card: Pillow and tifffile for the TIFF, Pillow and
# OpenCV for the PNG, each reading the CPU-written file's pixels from it (a reader missing here
# is named and skipped); the files go to $OUT too, for readers this machine lacks
[ -n "${OUT:-}" ] && cp gc_g.tif gc_g.png gc_c.tif gc_c.png "$OUT/" 2>/dev/null
$PY "$SRC/tests/e2e/readers_agree.py" gc_g.tif gc_c.tif gc_g.png gc_c.png && ok ||
  bad "GPU codecs: another reader reads the card's file differently from the CPU's"
expect 0 "gpu codecs, TIFF decoded on the GPU" "$B" run -q --device gpu -e transpose gc_g.tif gc_gt.tif
"$B" run -q --device cpu -e transpose gc_c.tif gc_ct.tif
same_image gc_gt.tif gc_ct.tif && ok || bad "GPU codecs: a GPU-written TIFF read on the GPU differs from the CPU's"
# a damaged deflate strip read on the GPU: one line naming the file, no output, no temporary
$PY -c "
d = bytearray(open('gc_c.tif', 'rb').read())
for i in range(4000, 9000): d[i] ^= 0x5a
open('gc_bad.tif', 'wb').write(bytes(d))"
"$B" run -q --device gpu -e "median radius=2" gc_bad.tif gc_bad_out.tif 2>gc_bad.err
[ $? -ne 0 ] && ok || bad "a damaged deflate strip on the GPU did not fail the run"
grep -q "gc_bad.tif" gc_bad.err && [ "$(wc -l < gc_bad.err)" -eq 1 ] && ok || bad "damaged strip on the GPU: not one line naming the file: $(head -c 300 gc_bad.err)"
absent "damaged strip on the GPU, output" gc_bad_out.tif
no_temporaries "damaged strip on the GPU" .
mkdir -p fold_codec && cp big_gray.tif fold_codec/a.tif && cp big_gray.tif fold_codec/b.tif
expect 0 "gpu codecs, folder" "$B" run -q --device gpu --codecs gpu -e "median radius=2" fold_codec fold_codec_out
same_image fold_codec_out/a.tif gc_c.tif && ok || bad "GPU codecs in a folder: pixels differ from the CPU's"

# A GPU worker writes each file behind its next image's decoding (run/write_behind.h): the same
# bytes as written in line (IMGPIPE_WRITE_BEHIND=0), every image counted once, and a write that
# fails is one line naming its file while the others are written.
mkdir -p fold_behind fold_behind8
cp "$IMAGES/camera.png" "$IMAGES/coffee.png" rgb_odd.png gray_odd.png tiny.png row.png fold_behind8/
cp fold_behind8/* gray16.png fold_behind/
for fmt in png jpg; do
  folder=fold_behind; opts="--png-level 3"
  [ "$fmt" = jpg ] && folder=fold_behind8 opts="--jpeg-decoder gpu"
  n_in=$(ls "$folder" | wc -l)
  # shellcheck disable=SC2086
  expect 0 "write behind, $fmt" "$B" run --device gpu --profile --jobs 2 $opts --format "$fmt" -e "median radius=1" "$folder" "wb_$fmt"
  says "write behind, $fmt: every image" "$n_in succeeded, 0 failed"
  says "write behind, $fmt: written behind" "($n_in written behind the next image's decoding)"
  grep -q "(of which waiting for the last write [0-9]*\.[0-9] ms)" "$TMP/.stderr" && ok ||
    bad "write behind, $fmt: the workers' line does not say how long they waited for a write"
  # shellcheck disable=SC2086
  expect 0 "written in line, $fmt" env IMGPIPE_WRITE_BEHIND=0 "$B" run --device gpu --profile --jobs 2 $opts --format "$fmt" -e "median radius=1" "$folder" "wi_$fmt"
  says "written in line, $fmt" "(0 written behind the next image's decoding)"
  says "written in line, $fmt: no wait for a write" "(of which waiting for the last write 0.0 ms)"
  diff -r "wb_$fmt" "wi_$fmt" >/dev/null && ok || bad "write behind: the $fmt files differ from those written in line"
done
"$B" run -q --device cpu --png-level 3 -e "median radius=1" rgb_odd.png wb_rgb_cpu.png
same_image wb_png/rgb_odd.png wb_rgb_cpu.png && ok || bad "write behind: the PNG's pixels differ from the CPU's"
mkdir -p wb_fail/coffee.png/in_the_way
expect 1 "write behind, one write fails" "$B" run --device gpu --jobs 2 --png-level 3 --format png -e "median radius=1" fold_behind wb_fail
says "write behind, the failure names its file" "fold_behind/coffee.png: cannot move the finished file into place"
says "write behind, the others written" "$(( $(ls fold_behind | wc -l) - 1 )) succeeded, 1 failed"
[ "$(ls wb_fail | wc -l)" -eq "$(ls fold_behind | wc -l)" ] && ok || bad "write behind: $(ls wb_fail | wc -l) entries in wb_fail"
no_temporaries "write behind, a failed write" wb_fail

# JPEG through nvJPEG on the GPU (--jpeg-decoder gpu): decoded pixels within
# the bound measured against libjpeg-turbo (max difference 3), JPEG outputs encoded on the card
# readable and close to the CPU's, folders equal to single runs, damaged files refused the same way
$PY - <<'PYEOF' || bad "cannot make JPEG test images"
import cv2, numpy as np, os
src = os.environ["IMGPIPE_SAMPLES"]
a = cv2.imread(src + "/astronaut.png")
os.makedirs("jin", exist_ok=True)
full_chroma = [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, 0x111111] if hasattr(cv2, "IMWRITE_JPEG_SAMPLING_FACTOR") else []
cv2.imwrite("jin/a444.jpg", cv2.resize(a, (2001, 1499)), [cv2.IMWRITE_JPEG_QUALITY, 95] + full_chroma)
cv2.imwrite("jin/a420.jpg", cv2.resize(a, (1023, 767)), [cv2.IMWRITE_JPEG_QUALITY, 80])
cv2.imwrite("jin/gray.jpg", cv2.cvtColor(a, cv2.COLOR_BGR2GRAY), [cv2.IMWRITE_JPEG_QUALITY, 90])
cv2.imwrite("jin/prog.jpg", a, [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
cv2.imwrite("jin/b.png", a[:301, :257])
cv2.imwrite("jin/c.tif", a[:211, :173])
os.makedirs("jmany", exist_ok=True)
for i in range(500):
    cv2.imwrite("jmany/m%03d.jpg" % i, cv2.resize(a, (64 + i % 7, 48 + i % 5)), [cv2.IMWRITE_JPEG_QUALITY, 70 + i % 25])
PYEOF
# (where nvJPEG cannot be loaded, --jpeg-decoder gpu is a usage error, and these checks skip)
if "$B" run -q --device gpu --jpeg-decoder gpu -e grayscale jin/a420.jpg nvjpeg_probe.png 2>nvjpeg_probe.err; then
for f in a444 a420 gray prog; do
  "$B" run -q --device gpu --jpeg-decoder gpu -e "grayscale | median" "jin/$f.jpg" "jg_$f.png" || bad "nvJPEG run on $f.jpg failed"
  "$B" run -q --device gpu -e "grayscale | median" "jin/$f.jpg" "jc_$f.png" || bad "libjpeg run on $f.jpg failed"
  "$B" run -q --device gpu --jpeg-decoder gpu -e "grayscale | median" "jin/$f.jpg" "jg_$f.jpg" || bad "nvJPEG jpg->jpg on $f failed"
  "$B" run -q --device cpu -e "grayscale | median" "jin/$f.jpg" "jc_$f.jpg" || bad "CPU jpg->jpg on $f failed"
done
verdicts "nvJPEG pixels and GPU-encoded JPEG" <<'PYEOF'
import cv2, numpy as np
for f in ("a444", "a420", "gray", "prog"):
    g = cv2.imread("jg_%s.png" % f, 0); c = cv2.imread("jc_%s.png" % f, 0)
    d = int(np.abs(g.astype(int) - c.astype(int)).max()) if g is not None and c is not None and g.shape == c.shape else 999
    print("ok" if d <= 3 else "FAIL", "nvJPEG-decoded %s: max difference %d from libjpeg-turbo's (bound 3)" % (f, d))
    g = cv2.imread("jg_%s.jpg" % f, 0).astype(float); c = cv2.imread("jc_%s.jpg" % f, 0).astype(float)
    mse = ((g - c) ** 2).mean()
    psnr = 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)
    print("ok" if psnr >= 35 else "FAIL", "GPU-encoded %s.jpg: PSNR %.1f dB against the CPU encoder's (floor 35)" % (f, psnr))
PYEOF
"$B" run -q --device gpu -e "grayscale | median" jin/b.png jg_b.png || bad "PNG single run failed"
"$B" run -q --device gpu -e "grayscale | median" jin/c.tif jg_c.png || bad "TIFF single run failed"
expect 0 "folder of JPEG, PNG and TIFF on the GPU" "$B" run --device gpu --jpeg-decoder gpu --jobs 3 -e "grayscale | median" --format png jin jout
# a folder's JPEG is decoded by nvJPEG or, while the engine is busy or opening, by libjpeg-turbo:
# its output is the single run's on one of them
for f in a444 a420 gray prog b c; do
  if same_image "jout/$f.png" "jg_$f.png" || { [ -f "jc_$f.png" ] && same_image "jout/$f.png" "jc_$f.png"; }; then ok
  else bad "folder output $f.png differs from the single runs (nvJPEG's and libjpeg-turbo's)"; fi
done
# 500 JPEGs through nvJPEG: no failure, and device memory flat once every buffer is made
expect 0 "500-JPEG folder on the GPU" "$B" run --profile --device gpu --jpeg-decoder gpu --jobs 4 -e "grayscale | median" --format png jmany jmany_out
# decoded by the read-ahead decoder's engine batches and the workers' CPU beside them, or (without
# the read-ahead) by the workers' shared decoder
decoded=$(sed -n -e 's/.*nvJPEG read-ahead: \([0-9]*\) files decoded in .*, \([0-9]*\) by the workers.*; 0 files left.*/\1 \2/p' \
  -e 's/.*nvJPEG: \([0-9]*\) files decoded on the GPU.*/\1 0/p' "$TMP/.stderr" | awk '$1 + $2 > 0 { print $1 + $2; exit }')
if [ "${decoded:-0}" = 500 ]; then ok
else bad "500-JPEG folder on the GPU: no note of 500 files decoded by nvJPEG and the CPU beside it; it was: $(grep nvJPEG "$TMP/.stderr" | head -c 400)"; fi
grown=$(sed -n 's/.*GPU memory in use grew by \(-\{0,1\}[0-9.]*\) MiB.*/\1/p' "$TMP/.stderr" | tail -n 1)
if [ -n "$grown" ] && awk -v g="$grown" 'BEGIN { exit !(g <= 8) }'; then ok; else bad "device memory grew by '${grown:-?}' MiB over 500 images (bound 8)"; fi
echo "500-JPEG folder: $(grep -h "nvJPEG:" "$TMP/.stderr" | tail -n 1)"
expect 0 "folder to JPEG on the GPU" "$B" run --device gpu --jpeg-decoder gpu --jobs 2 -e "grayscale | median" --format jpg jin joutj
for f in a444 gray; do
  if same_image "joutj/$f.jpg" "jg_$f.jpg"; then ok; else bad "folder JPEG output $f.jpg differs from the single run"; fi
done
head -c 20000 jin/a444.jpg > cut.jpg
expect 1 "truncated JPEG on the GPU, --fail-on warning" "$B" run --device gpu --jpeg-decoder gpu --fail-on warning -e grayscale cut.jpg cut_out.png
says "truncated JPEG on the GPU, --fail-on warning" "truncated or corrupt JPEG"
absent "truncated JPEG output" cut_out.png
expect 0 "truncated JPEG on the GPU, decoded by libjpeg-turbo with a warning" "$B" run --device gpu --jpeg-decoder gpu -e grayscale cut.jpg cut_out.png
says "truncated JPEG on the GPU warns" "warning: cut.jpg: truncated or corrupt JPEG: Premature end of JPEG file"
# EXIF orientation and metadata on the nvJPEG route: an oriented file goes to libjpeg-turbo, which
# turns it upright as on the CPU; a JPEG encoded on the card gets the profile, EXIF and density.
$PY - <<'PYEOF' || bad "cannot make an oriented JPEG"
from PIL import Image, ImageCms
ex = Image.Exif()
ex[0x0112] = 6
ex[0x010F] = "TestMake"
icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
Image.open("jin/b.png").convert("RGB").save("o6.jpg", exif=ex.tobytes(), icc_profile=icc, dpi=(300, 300), quality=95)
open("o6.icc", "wb").write(icc)
PYEOF
"$B" run -q --device gpu --jpeg-decoder gpu -e "grayscale | median" o6.jpg o6_g.png || bad "nvJPEG run on an oriented JPEG failed"
"$B" run -q --device cpu -e "grayscale | median" o6.jpg o6_c.png || bad "CPU run on an oriented JPEG failed"
same_image o6_g.png o6_c.png && ok || bad "oriented JPEG: the GPU run's output differs from the CPU's"
"$B" run -q --device gpu --jpeg-decoder gpu -e "median" o6.jpg o6_g.jpg || bad "nvJPEG jpg->jpg on an oriented JPEG failed"
verdicts "GPU-encoded JPEG metadata" <<'PYEOF'
from PIL import Image
im, src = Image.open("o6_g.jpg"), Image.open("o6.jpg")
ex = im.getexif()
print("ok" if im.size == src.size[::-1] else "FAIL", "GPU-encoded oriented JPEG: size %s, stored %s" % (im.size, src.size))
print("ok" if im.info.get("icc_profile") == open("o6.icc", "rb").read() else "FAIL", "GPU-encoded JPEG: profile kept")
print("ok" if ex.get(0x010F) == "TestMake" and ex.get(0x0112) == 1 else "FAIL", "GPU-encoded JPEG: EXIF kept, tagged upright")
print("ok" if im.info.get("dpi") == (300, 300) else "FAIL", "GPU-encoded JPEG: density %s" % (im.info.get("dpi"),))
PYEOF
else
  echo "nvJPEG checks skipped: $(head -n 1 nvjpeg_probe.err)"
fi

# a GPU that cannot hold the image: one-line error with --device gpu, CPU fallback with auto
expect 1 "gpu out of memory" env IMGPIPE_GPU_ALLOC_LIMIT=1000 "$B" run --device gpu -e "median radius=2" "$IMAGES/camera.png" oom.png
says "gpu out of memory" "GPU out of memory"
absent "gpu out of memory output" oom.png
expect 0 "auto falls back to the CPU" env IMGPIPE_GPU_ALLOC_LIMIT=1000 "$B" run --device auto -e "$heavy" big_gray.tif oom.tif
says "auto falls back to the CPU" "running this image on the CPU"
exists "auto fallback output" oom.tif
if same_image oom.tif cpu_big.tif; then ok; else bad "auto's CPU fallback and the CPU wrote different files"; fi
# Streamed on the GPU (--stream on): the band executor on device rows, byte-identical to the CPU's
# whole-image run; two workers on GPU 0 (--gpus 0,0) identical too; --gpu-memory honoured (the
# profile's peak line), and a global stage too large for it refused before decoding.
$PY - <<'PYEOF' || bad "cannot make streamed inputs"
import numpy as np, tifffile
r = np.random.default_rng(5)
tifffile.imwrite("st_rgb.tif", r.integers(0, 256, (2003, 1531, 3), dtype=np.uint8), compression="zlib",
                 rowsperstrip=16, photometric="rgb")
tifffile.imwrite("st_g16.tif", r.integers(0, 65536, (1001, 777), dtype=np.uint16), compression="zlib", tile=(64, 64))
PYEOF
stream_pipes=("$(grep -v '^#' "$SRC/pipelines/denoise.pipe" | sed 's/#.*//' | paste -sd'|')"
              "median radius=2 | histogram out=HIST | mean radius=3 border=reflect101 | convolve kernel=gaussian5"
              "median radius=1 | transpose | mean radius=2 border=zero")
for in in st_rgb.tif st_g16.tif; do
  for k in 0 1 2; do
    pipe=${stream_pipes[$k]}
    expect 0 "cpu whole $k $in" "$B" run -q --device cpu --stream off -e "${pipe/HIST/hw.csv}" "$in" sw.tif
    expect 0 "gpu streamed $k $in" "$B" run -q --device gpu --stream on --memory 64M -e "${pipe/HIST/hg.csv}" "$in" sg.tif
    same_image sw.tif sg.tif && ok || bad "GPU streamed '$pipe' on $in differs from the CPU whole-image run"
    expect 0 "gpu 2 workers $k $in" "$B" run -q --device gpu --gpus 0,0 --stream on --memory 64M -e "${pipe/HIST/h2.csv}" "$in" s2.tif
    same_image sw.tif s2.tif && ok || bad "two GPU workers: '$pipe' on $in differs from the CPU whole-image run"
    if [ "$k" = 1 ]; then
      cmp -s hw.csv hg.csv && ok || bad "GPU streamed histogram differs on $in"
      cmp -s hw.csv h2.csv && ok || bad "two GPU workers: histogram differs on $in"
    fi
  done
done
expect 0 "gpu streamed, 2 workers, profile" "$B" run --device gpu --gpus 0,0 --stream on --profile -e "median | mean" st_rgb.tif sp.tif
says "gpu streamed device line" "device: GPU 0"
says "gpu streamed workers" "2 workers"
says "gpu streamed stage on the gpu" "median (gpu)"
# A deflate TIFF streamed out of a GPU run: with one CPU thread the strips queue up and the card
# compresses some of them (the profile counts them); Pillow and tifffile read the CPU's pixels;
# --codecs cpu keeps the CPU's bytes. Batches of 1 MiB, so that this small image has some.
expect 0 "gpu streamed, strips on the GPU" env IMGPIPE_TIFF_GPU_BATCH_MB=1 "$B" run --device gpu --threads 1 --stream on \
  --profile -e "median | mean" st_rgb.tif sgs.tif
grep -qE "TIFF strips on GPU +[1-9]" "$TMP/.stderr" && ok ||
  bad "gpu streamed: the card compressed no strip: $(grep -F 'TIFF strips' "$TMP/.stderr")"
"$B" run -q --device cpu --stream off -e "median | mean" st_rgb.tif sgs_c.tif
same_image sgs.tif sgs_c.tif && ok || bad "gpu streamed, strips on the GPU: pixels differ from the CPU's"
$PY "$SRC/tests/e2e/readers_agree.py" sgs.tif sgs_c.tif && ok ||
  bad "gpu streamed, strips on the GPU: another reader reads the file differently from the CPU's"
expect 0 "gpu streamed, --codecs cpu" env IMGPIPE_TIFF_GPU_BATCH_MB=1 "$B" run --device gpu --codecs cpu --threads 1 \
  --stream on --profile -e "median | mean" st_rgb.tif sgs_k.tif
grep -qF "TIFF strips on GPU" "$TMP/.stderr" && bad "--codecs cpu, streamed: the card compressed strips" || ok
"$B" run -q --device cpu --stream on -e "median | mean" st_rgb.tif sgs_cs.tif
cmp -s sgs_k.tif sgs_cs.tif && ok || bad "--codecs cpu, streamed: the file differs from --device cpu's"
# Deflate TIFFs streamed into a GPU run with their bands inflated on the card
# (IMGPIPE_TIFF_GPU_READ_BANDS=1), strips with the predictor and 64x64 tiles: every band taken
# there, the output the CPU's.
"$B" run -q --device cpu --stream off -e "transpose | transpose" st_rgb.tif st_pred.tif
for in in st_pred.tif st_g16.tif; do
  expect 0 "gpu streamed, bands of $in inflated on the GPU" env IMGPIPE_TIFF_GPU_READ_BANDS=1 "$B" run --device gpu \
    --stream on --profile -e "median | mean" "$in" sgb.tif
  grep -qE "TIFF bands on GPU +([0-9]+) of \1 bands inflated on the GPU$" "$TMP/.stderr" && ok ||
    bad "gpu streamed: $in's bands not all inflated on the card: $(grep -F 'TIFF bands' "$TMP/.stderr")"
  "$B" run -q --device cpu --stream off -e "median | mean" "$in" sgb_c.tif
  same_image sgb.tif sgb_c.tif && ok || bad "gpu streamed, $in's bands inflated on the GPU: pixels differ from the CPU's"
done
# --gpu-memory: the band height follows it and the measured peak stays under it
for lim in 4 16; do
  expect 0 "gpu memory $lim MiB" "$B" run --device gpu --stream on --profile --gpu-memory ${lim}M "$SRC/pipelines/denoise.pipe" st_rgb.tif gm.tif
  peak=$(sed -n 's/.*gpu memory: peak \([0-9.]*\) MiB.*/\1/p' "$TMP/.stderr" | tail -n 1)
  if [ -n "$peak" ] && awk -v p="$peak" -v l="$lim" 'BEGIN { exit !(p > 0 && p <= l) }'; then ok
  else bad "--gpu-memory ${lim}M: peak '${peak:-?}' MiB"; fi
  echo "--gpu-memory ${lim}M: $(grep -h "gpu memory: peak" "$TMP/.stderr" | tail -n 1)"
  "$B" run -q --device cpu --stream off "$SRC/pipelines/denoise.pipe" st_rgb.tif gm_c.tif
  same_image gm.tif gm_c.tif && ok || bad "--gpu-memory ${lim}M output differs from the CPU's"
done
expect 2 "global stage too large for --gpu-memory" "$B" run -q --device gpu --stream on --gpu-memory 4M -e "median | transpose" st_rgb.tif gt.tif
says "global stage too large for --gpu-memory" "stage 'transpose' (line 1) needs the whole image"
says "global stage too large names the option" "(--gpu-memory)"
absent "global stage too large output" gt.tif
# a stage without a GPU path inside a GPU segment: round trips, same bytes as the CPU
expect 0 "gpu streamed round trip" "$B" run -q --device gpu --stream on --plugin-path "$TP/cpuonly" -e "median | cpuxor | mean radius=2" st_rgb.tif rt_s.tif
expect 0 "cpu whole round trip" "$B" run -q --device cpu --stream off --plugin-path "$TP/cpuonly" -e "median | cpuxor | mean radius=2" st_rgb.tif rt_w.tif
same_image rt_s.tif rt_w.tif && ok || bad "GPU streamed run with a CPU-only stage differs from the CPU's"
# auto: heavy work streamed goes to the GPU, the same bytes as the CPU's whole-image run
expect 0 "auto streamed heavy" "$B" run --device auto --stream on -e "$heavy" big_gray.tif auto_st.tif
says "auto streamed on the GPU" "device: GPU 0"
same_image auto_st.tif cpu_big.tif && ok || bad "auto streamed on the GPU differs from the CPU's whole-image run"
# a GPU that cannot hold a band: one line and no output with --device gpu, the CPU under auto
expect 1 "gpu streamed out of memory" env IMGPIPE_GPU_ALLOC_LIMIT=1000 "$B" run --device gpu --stream on -e "median radius=2" st_rgb.tif oom_s.tif
says "gpu streamed out of memory" "GPU out of memory"
absent "gpu streamed out of memory output" oom_s.tif
expect 0 "auto streamed falls back to the CPU" env IMGPIPE_GPU_ALLOC_LIMIT=1000 "$B" run --device auto --stream on -e "$heavy" big_gray.tif oom_st.tif
says "auto streamed falls back to the CPU" "running this image on the CPU"
same_image oom_st.tif cpu_big.tif && ok || bad "auto's streamed CPU fallback differs from the CPU's whole-image run"
finish
