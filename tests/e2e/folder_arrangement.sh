# A folder by GPU and CPU workers from one queue (issue 29 item 4): --device gpu+cpu and auto's
# measured arrangement write exactly what --device cpu writes (PNG and TIFF out, JPEG decoded by
# libjpeg-turbo), each image once; auto says what it chose with the rates it measured; a
# --jpeg-decoder gpu folder under auto never mixes decoders. Skips (77) without a GPU.
. "$(dirname "$0")/lib.bash"
B=$IMGPIPE_BIN
cd "$TMP"
require_gpu

# 60 images of odd sizes, PNG and JPEG: enough for auto to measure with --jobs 4
$PY - <<'PYEOF' || { echo "cannot make test images"; exit 1; }
import cv2, numpy as np, os
r = np.random.default_rng(29)
os.makedirs("in", exist_ok=True)
cam = cv2.imread(os.environ["IMGPIPE_SAMPLES"] + "/astronaut.png")
for i in range(60):
    h, w = 1 + (i * 37) % 397, 1 + (i * 53) % 509
    img = cv2.resize(cam, (w, h), interpolation=cv2.INTER_AREA)
    img = cv2.add(img, r.integers(0, 20, img.shape, dtype=np.uint8))
    if i % 3 == 0: cv2.imwrite("in/img%03d.jpg" % i, img, [cv2.IMWRITE_JPEG_QUALITY, 90])
    else: cv2.imwrite("in/img%03d.png" % i, img)
PYEOF
P="grayscale | median radius=1 | mean radius=2"
n=$(ls in | wc -l)

for fmt in png tif; do
  expect 0 "cpu, $fmt" "$B" run --device cpu --jobs 4 --format $fmt -e "$P" in cpu_$fmt
  expect 0 "gpu+cpu, $fmt" "$B" run --device gpu+cpu --jobs 4 --format $fmt -e "$P" in mixed_$fmt
  says "gpu+cpu workers line" "4 workers: 2 on "
  says "gpu+cpu CPU workers" ", 2 CPU workers with "
  says "gpu+cpu summary" "$n succeeded, 0 failed"
  expect 0 "auto, $fmt" "$B" run --device auto --jobs 4 --format $fmt -e "$P" in auto_$fmt
  grep -q "device: .*: measured .* images/s" "$TMP/.stderr" || grep -q "device: CPU, 4 workers (auto" "$TMP/.stderr" &&
    ok || bad "auto's device line: $(grep device: "$TMP/.stderr")"
  for d in mixed_$fmt auto_$fmt; do
    [ "$(ls $d | wc -l)" -eq "$n" ] && ok || bad "$d: $(ls $d | wc -l) outputs, want $n"
    diff -r -q cpu_$fmt $d >/dev/null && ok || bad "$d differs from the CPU run: $(diff -r -q cpu_$fmt $d | head -n 3)"
    no_temporaries "$d" $d
  done
done

# nvJPEG: auto keeps every image on one decoder (no measuring, no CPU workers)
expect 0 "auto, --jpeg-decoder gpu" "$B" run --device auto --jobs 4 --jpeg-decoder gpu -e "$P" in auto_nvjpeg
if grep -q "measured" "$TMP/.stderr"; then bad "auto mixed decoders under --jpeg-decoder gpu"; else ok; fi
expect 0 "gpu+cpu -v, --jpeg-decoder gpu" "$B" run -v --device gpu+cpu --jobs 4 --jpeg-decoder gpu -e "$P" in mixed_nvjpeg
says "gpu+cpu with nvJPEG says outputs may differ" "depends on the worker that ran it"
finish
