# The command line end to end: sub-commands, exit codes, one-line errors, no partial output.
. "$(dirname "$0")/lib.bash"
B=$IMGPIPE_BIN
cd "$TMP"

expect 0 "--help" "$B" --help
grep -q "exit codes" "$TMP/.stdout" && ok || bad "--help lacks the exit codes"
grep -q -- "--no-fuse" "$TMP/.stdout" && grep -q "median radius=1, mean" "$TMP/.stdout" && grep -q "radius<=16, whole-weight convolve (not a 3x3 or 5x5 of small" "$TMP/.stdout" && grep -q "bins<=16, levels>=256) or histogram are computed" "$TMP/.stdout" && ok || bad "--help lacks --no-fuse and what fuses"
expect 0 "--no-fuse on the CPU is accepted and changes nothing" "$B" run -q --device cpu --no-fuse -e "grayscale | median" "$IMAGES/camera.png" nofuse.png
expect 0 "without --no-fuse" "$B" run -q --device cpu -e "grayscale | median" "$IMAGES/camera.png" fuse.png
cmp -s nofuse.png fuse.png && ok || bad "--no-fuse changed a CPU run's output"
expect 2 "--no-fuse takes no value" "$B" run --no-fuse=1 -e grayscale "$IMAGES/camera.png" x.png
expect 0 "--version" "$B" --version
grep -q "plugin ABI 1" "$TMP/.stdout" && ok || bad "--version lacks the ABI"
expect 2 "no command" "$B"
expect 2 "unknown command" "$B" frobnicate
says "unknown command" "unknown command 'frobnicate'"
expect 2 "unknown option" "$B" run --nope x y z
says "unknown option" "unknown option '--nope'"
expect 2 "bad --threads" "$B" run --threads zero -e grayscale a.png b.png
says "bad --threads" "--threads expects a whole number from 1 to 1024, not 'zero'"

# plugins
expect 0 "plugins" "$B" plugins
for s in grayscale transpose; do grep -q "^$s " "$TMP/.stdout" && ok || bad "plugins lacks $s"; done
expect 0 "plugins grayscale" "$B" plugins grayscale
grep -q "weights" "$TMP/.stdout" && grep -q "one of bt601, bt709, average" "$TMP/.stdout" && ok || bad "plugins grayscale lacks its parameter"
grep -q "fusion: offers its per-pixel function" "$TMP/.stdout" && ok || bad "plugins grayscale does not say it can be fused"
expect 0 "plugins median" "$B" plugins median
if grep -q "fusion:" "$TMP/.stdout"; then bad "plugins median claims a point function"; else ok; fi
expect 2 "plugins unknown" "$B" plugins nothing

# a run that works, on the CPU, with the result checked against OpenCV
expect 0 "grayscale run" "$B" run --device cpu -e "grayscale | transpose" "$IMAGES/astronaut.png" gray.png
says "device line" "device: CPU"
$PY - "$IMAGES/astronaut.png" gray.png <<'PYEOF' && ok || bad "grayscale|transpose differs from OpenCV"
import sys, cv2, numpy as np
want = cv2.cvtColor(cv2.imread(sys.argv[1], cv2.IMREAD_COLOR), cv2.COLOR_BGR2GRAY).T
got = cv2.imread(sys.argv[2], cv2.IMREAD_UNCHANGED)
sys.exit(0 if got is not None and got.shape == want.shape and np.array_equal(got, want) else 1)
PYEOF
expect 0 "quiet run" "$B" run -q --device cpu -e grayscale "$IMAGES/camera.png" q.png
[ ! -s "$TMP/.stderr" ] && ok || bad "-q printed: $(cat "$TMP/.stderr")"
expect 0 "profile" "$B" run --profile --device cpu -e grayscale "$IMAGES/coffee.png" p.tif
says "profile decode" "decode"
says "profile stage" "grayscale (cpu)"
says "profile encode" "encode"
expect 0 "16-bit tif in, png out" "$B" run --device cpu -e transpose "$IMAGES/chessboard_GRAY_U16.tif" c16.png
expect 0 "jpeg in, jpeg out" "$B" run --device cpu --quality 80 -e grayscale "$IMAGES/hubble_deep_field.jpg" h.jpg
# --codecs cpu keeps nvJPEG off whatever --jpeg-decoder says (the run is not held to nvJPEG's whole images)
expect 0 "--jpeg-decoder gpu" "$B" run -v --jpeg-decoder gpu -e grayscale "$IMAGES/hubble_deep_field.jpg" hj.png
says "--jpeg-decoder gpu asks for nvJPEG" "nvJPEG"
expect 0 "--codecs cpu --jpeg-decoder gpu" "$B" run -v --codecs cpu --jpeg-decoder gpu -e grayscale "$IMAGES/hubble_deep_field.jpg" hc.png
if grep -q nvJPEG "$TMP/.stderr"; then bad "--codecs cpu still asks for nvJPEG: $(head -c 300 "$TMP/.stderr")"; else ok; fi
# --tiff-level: level 1 gives a larger file than 9 for the same pixels; out of range is refused
expect 0 "tiff level 1" "$B" run --device cpu --tiff-level 1 -e grayscale "$IMAGES/coffee.png" l1.tif
expect 0 "tiff level 9" "$B" run --device cpu --tiff-level 9 -e grayscale "$IMAGES/coffee.png" l9.tif
if [ "$(stat -c %s l1.tif)" -gt "$(stat -c %s l9.tif)" ]; then ok; else bad "--tiff-level 1 is not larger than 9: $(stat -c %s l1.tif) vs $(stat -c %s l9.tif)"; fi
expect 0 "tiff levels decode equal" "$B" run --device cpu -e transpose l1.tif l1t.png
expect 0 "tiff levels decode equal" "$B" run --device cpu -e transpose l9.tif l9t.png
cmp -s l1t.png l9t.png && ok || bad "--tiff-level 1 and 9 decode to different pixels"
expect 2 "tiff level out of range" "$B" run --tiff-level 0 -e grayscale "$IMAGES/coffee.png" l0.tif
says "tiff level out of range" "--tiff-level"

# pipeline errors: exit 2 with FILE:LINE:COL, nothing written
printf 'grayscale\ntranspos\n' > typo.pipe
expect 2 "misspelt stage" "$B" run typo.pipe "$IMAGES/camera.png" out1.png
says "misspelt stage" "typo.pipe:2:1: unknown stage 'transpos' (did you mean 'transpose'?)"
absent "misspelt stage output" out1.png
expect 2 "misspelt parameter" "$B" run -e "grayscale weigths=bt601" "$IMAGES/camera.png" out1.png
says "misspelt parameter" "-e:1:11: unknown parameter 'weigths' for stage 'grayscale' (did you mean 'weights'?)"
expect 2 "bad choice" "$B" check -e "grayscale weights=bt61"
says "bad choice" "-e:1:19: weights must be one of: bt601, bt709, average (not 'bt61') - did you mean 'bt601'?"
expect 2 "missing =" "$B" check -e "grayscale weights"
says "missing =" "-e:1:11: expected '=' after 'weights'"
expect 2 "unterminated quote" "$B" check -e 'grayscale weights="bt601'
says "unterminated quote" "-e:1:19: unterminated quote"
printf '# nothing here\n\n' > empty.pipe
expect 2 "empty pipeline" "$B" check empty.pipe
says "empty pipeline" "empty.pipe:1:1: empty pipeline: no stages"
expect 2 "missing pipeline file" "$B" check nothere.pipe
expect 0 "check ok" "$B" check "$SRC/pipelines/gray.pipe"
grep -q "ok: 1 stage, 640x480 3-channel 8-bit in -> 640x480 1-channel 8-bit out" "$TMP/.stdout" && ok || bad "check output: $(cat "$TMP/.stdout")"
expect 2 "unknown output extension" "$B" run -e grayscale "$IMAGES/camera.png" out.bmp
says "unknown output extension" "use .png, .jpg, .jpeg, .tif or .tiff"
expect 2 "--device gpu without a GPU or CUDA" env CUDA_VISIBLE_DEVICES= "$B" run --device gpu -e grayscale "$IMAGES/camera.png" g.png
says "--device gpu" "--device gpu:"
absent "--device gpu output" g.png
mkdir -p gc_in && cp "$IMAGES/camera.png" gc_in/
expect 2 "--device gpu+cpu without a GPU or CUDA" env CUDA_VISIBLE_DEVICES= "$B" run --device gpu+cpu -e grayscale gc_in gc_out
says "--device gpu+cpu" "--device gpu:"
absent "--device gpu+cpu output" gc_out/camera.png
expect 2 "--device misspelt" "$B" run --device gpu+cpux -e grayscale "$IMAGES/camera.png" g.png
says "--device misspelt" "--device must be auto, cpu, gpu or gpu+cpu, not 'gpu+cpux'"

# auto: a small image never starts the GPU; with CUDA built, heavy work on a larger image asks
# for it (and without a GPU goes on on the CPU, saying why); on a machine without an NVIDIA
# driver auto says so in plain words and never asks CUDA
expect 0 "auto, small image" "$B" run -e "grayscale | median | convolve" "$IMAGES/camera.png" auto_small.png
says "auto, small image" "device: CPU"
driver=0
[ -e /dev/nvidiactl ] || [ -e /proc/driver/nvidia/version ] && driver=1
if "$B" --version | grep -q "CUDA built in"; then
  if [ $driver = 1 ]; then
    says "auto, small image, why" "the CPU is estimated faster"
  else
    says "auto, small image, no driver" "(no GPU: this machine has no NVIDIA driver"
  fi
  $PY -c "import cv2, numpy as np; cv2.imwrite('gray2k.tif', np.tile(cv2.imread('$IMAGES/camera.png', 0), (4, 4)))"
  expect 0 "auto, heavy work" env CUDA_VISIBLE_DEVICES= "$B" run --threads 2 \
    -e "median radius=15 | median radius=15 | median radius=15 | median radius=15 | median radius=15 | median radius=15 | median radius=15 | median radius=15" \
    gray2k.tif auto_heavy.tif
  if [ $driver = 1 ]; then
    says "auto, heavy work, GPU asked for" "no usable CUDA device"
  else
    says "auto, heavy work, no driver" "device: CPU, 2 threads (no GPU: this machine has no NVIDIA driver"
  fi
  # a folder of light work stays on the CPU before any GPU is asked for (bench/folder-devices.sh)
  mkdir -p light_in && cp "$IMAGES/camera.png" "$IMAGES/coffee.png" light_in/
  expect 0 "auto, folder of light work" "$B" run --jobs 2 -e "grayscale | median" light_in light_out
  says "auto, folder of light work" "device: CPU, 2 workers (auto: the stages of 2 images would take the cores"
  exists "auto, folder of light work, output" light_out/coffee.png
else
  says "auto, small image, why" "built without CUDA"
fi

# image errors: exit 1, one line, no output, no temporary left
head -c 3000 "$IMAGES/astronaut.png" > truncated.png
expect 1 "truncated input" "$B" run --device cpu -e grayscale truncated.png out2.png
[ "$(wc -l < "$TMP/.stderr")" -le 2 ] && ok || bad "truncated input: more than one error line"
says "truncated input names the file" "imgpipe: truncated.png:"
absent "truncated input output" out2.png
no_temporaries "truncated input" .
echo "hello" > notimage.png
expect 1 "not an image" "$B" run --device cpu -e grayscale notimage.png out3.png
says "not an image" "notimage.png: not a PNG, JPEG or TIFF file"
expect 1 "missing input" "$B" run --device cpu -e grayscale nothere.png out4.png
expect 1 "pixel limit" "$B" run --device cpu --max-pixels 1000 -e grayscale "$IMAGES/camera.png" out5.png
says "pixel limit" "camera.png: image is 512x512 (262144 pixels), over the limit of 1000 pixels (--max-pixels raises it)"
absent "pixel limit output" out5.png
mkdir -p ro && chmod 555 ro
if [ "$(id -u)" -ne 0 ]; then
  expect 1 "unwritable folder" "$B" run --device cpu -e grayscale "$IMAGES/camera.png" ro/x.png
fi
expect 1 "output folder missing" "$B" run --device cpu -e grayscale "$IMAGES/camera.png" nofolder/x.png
expect 2 "float to png" "$B" run --device cpu -e "grayscale | entropy" "$IMAGES/camera.png" ent.png
says "float to png" "PNG cannot hold 32-bit float"
absent "float to png output" ent.png
# planning happens from the header, before any pixel is decoded: a truncated colour PNG fed to
# entropy is a pipeline error (exit 2), not a decoding failure
head -c 100000 "$IMAGES/astronaut.png" > cut.png
expect 2 "plan before decode" "$B" run --device cpu -e "entropy" cut.png out6.png
says "plan before decode" "-e:1:1: entropy needs one channel, got 3: add 'grayscale' before it (input: 512x512 3-channel 8-bit)"

# plugins from --plugin-path and IMGPIPE_PLUGIN_PATH; refused plugins are named
TP=${IMGPIPE_TEST_PLUGINS:?}
expect 0 "--plugin-path" "$B" run --device cpu --plugin-path "$TP/good" -e "invert" "$IMAGES/camera.png" inv.png
$PY - "$IMAGES/camera.png" inv.png <<'PYEOF' && ok || bad "invert result wrong"
import sys, cv2, numpy as np
a = cv2.imread(sys.argv[1], cv2.IMREAD_UNCHANGED); b = cv2.imread(sys.argv[2], cv2.IMREAD_UNCHANGED)
sys.exit(0 if np.array_equal(255 - a, b) else 1)
PYEOF
expect 0 "IMGPIPE_PLUGIN_PATH" env IMGPIPE_PLUGIN_PATH="$TP/good" "$B" check -e invert
expect 0 "refused plugins warn" "$B" plugins --plugin-path "$TP/badabi:$TP/nosym:$TP/dup"
says "ABI refusal" "oldabi.so: built for plugin ABI version 99, this imgpipe needs version 1: rebuild the plugin"
says "symbol refusal" "nosym.so: not an imgpipe plugin: it does not export imgpipe_stage()"
says "duplicate refusal" "b_twin.so: stage 'twin' is also provided by"
expect 2 "duplicate stage used" "$B" check --plugin-path "$TP/dup" -e twin
says "duplicate stage used" "stage 'twin' is provided by two plugins"
expect 2 "plugin refuses its plan" "$B" run --plugin-path "$TP/failing" -e "failing mode=plan" "$IMAGES/camera.png" f.png
says "plugin refuses its plan" "-e:1:1: failing: refuses every input (test plugin)"
expect 1 "plugin fails at run" "$B" run --device cpu --plugin-path "$TP/failing" -e "failing mode=run" "$IMAGES/camera.png" f.png
says "plugin fails at run" "stage 'failing' (line 1) failed: deliberate failure (test plugin)"
absent "plugin failure output" f.png
no_temporaries "plugin failure" .

# A signal during the write of one image (TERM, HUP; Ctrl-C's INT runs the same handler but a
# script's background job ignores it): the output's temporary goes with the process, whole-image
# and streamed alike, and the exit is the signal's.
$PY -c "import cv2, numpy as np; cv2.imwrite('noise.tif', np.random.default_rng(7).integers(0, 256, size=(4096, 4096, 3), dtype=np.uint8))"
interrupt_write() {   # signal, --stream mode
  local dir="sig_$1_$2" pid seen=0 code
  mkdir -p "$dir"
  "$B" run -q --device cpu --stream "$2" -e "mean radius=1" noise.tif "$dir/out.png" 2>/dev/null &
  pid=$!
  for _ in $(seq 1000); do
    if ls -A "$dir" | grep -q '^\.imgpipe-tmp-'; then seen=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill -"$1" "$pid" 2>/dev/null
  wait "$pid"
  code=$?
  [ "$seen" = 1 ] && ok || bad "$1, --stream $2: the temporary output never appeared (the write ended first?)"
  [ "$code" -eq $((128 + $(kill -l "$1"))) ] && ok || bad "$1, --stream $2: exit $code, wanted the signal's"
  no_temporaries "$1 during the write, --stream $2" "$dir"
  absent "$1 during the write, --stream $2" "$dir/out.png"
}
interrupt_write TERM off
interrupt_write TERM on
interrupt_write HUP off

finish
