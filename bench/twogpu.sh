#!/usr/bin/env bash
# One image over two GPUs (issue 16): a 16384x16384 RGB TIFF and a 100000x100000 gray tiled BigTIFF
# (10 gigapixels; bench/stream_images.py makes both) streamed through pipelines/denoise.pipe
# (light) and eight `median radius=7` stages (heavy), with --gpus 0 and --gpus all; the two
# outputs compared with cmp. Per run: the whole process's wall time, each worker's busy time from
# --profile (a worker per GPU), each GPU's mean utilization from nvidia-smi every 100 ms, and the
# decode and encode totals that bound the rest. Then bench/multigpu.sh over a folder of JPEGs
# with nvJPEG, light and heavy. Prints a markdown table and writes it to $OUT/twogpu.md (rewritten
# after each run: a run cut short keeps what it measured).
# usage: IMGPIPE_BIN=... bench/twogpu.sh
#   SCALE      full (16384, 100000x100000) or small (2048, 8000x8000)
#   HUGE_COMPRESSION   --tiff-compression of the 10-gigapixel outputs (default none: deflate
#              alone takes 65 s there, bench/RESULTS.md, and would hide the GPUs)
#   LIMIT_S    runs not started within this many seconds are left out (default: no limit)
#   FOLDER_IMAGES   JPEGs for the folder runs (default 64; 0 leaves them out)
#   ONLY       the runs to make, of big-light big-heavy big-heavy-none huge-light huge-heavy
#              folder-light folder-heavy (default all)
set -u
export LC_ALL=C
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
out_dir=${OUT:-}
limit_s=${LIMIT_S:-0}
folder_images=${FOLDER_IMAGES:-64}
huge_compression=${HUGE_COMPRESSION:-none}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
light=$src/pipelines/denoise.pipe
heavy="median radius=7 | median radius=7 | median radius=7 | median radius=7 | median radius=7 | median radius=7 | median radius=7 | median radius=7"

say() { printf 'twogpu: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }
case ${SCALE:-full} in
  full) big=16384 huge_w=100000 huge_h=100000 ;;
  small) big=2048 huge_w=8000 huge_h=8000 ;;
  *) die "SCALE must be full or small, not '$SCALE'" ;;
esac
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
[ "$gpus" -ge 2 ] || die "needs two GPUs; nvidia-smi lists $gpus"
# shellcheck source=bench/python.sh
. "$here/python.sh"
PY=$(bench_python cv2 numpy tifffile) || die "no Python with OpenCV, numpy and tifffile"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT
md=$tmp/twogpu.md
rows=()
notes=()
status=0
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
commit=${COMMIT:-$(cat "$src/build-gpu/bin/commit.txt" 2>/dev/null || git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}
time_left() { [ "$limit_s" = 0 ] || [ "$SECONDS" -lt "$limit_s" ]; }

write_md() {
  {
    echo "## Two GPUs (issue 16): $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $gpus x $gpu_name, commit $commit"
    echo
    echo "\`bench/twogpu.sh\` (SCALE=${SCALE:-full}): \`imgpipe run --device gpu --stream on --profile\`, TIFF to TIFF;"
    echo "wall: the whole process; busy: each band worker's time running its chunks (\`--profile\`; one"
    echo "worker: the stages' GPU time); util: each GPU's mean utilization over the run (nvidia-smi, 100 ms)."
    echo "${make_note:-}"
    echo
    echo "| image | pipeline | --gpus | wall | Mpix/s | busy per GPU | util GPU0 / GPU1 | decode / encode | output |"
    echo "| --- | --- | --- | --: | --: | --- | --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    [ ${#notes[@]} -gt 0 ] && { echo; printf '%s\n' "${notes[@]}"; }
  } >"$md"
  [ -n "$out_dir" ] && cp "$md" "$out_dir/twogpu.md"
}

# util_start / util_stop: each GPU's mean utilization while a run lasts, as "a% / b%"
util_start() {
  nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 100 >"$tmp/util" 2>/dev/null &
  util_pid=$!
}
util_stop() {
  kill "$util_pid" 2>/dev/null
  wait "$util_pid" 2>/dev/null
  util=$(awk -F', *' '$2 ~ /^[0-9]+$/ { s[$1] += $2; n[$1]++ }
    END { printf "%.0f%% / %.0f%%", n[0] ? s[0] / n[0] : 0, n[1] ? s[1] / n[1] : 0 }' "$tmp/util")
}

# busy_of ERRFILE: "a / b ms" from the worker lines, else the stages' summed GPU time
busy_of() {
  local w
  w=$(awk '/^  worker [0-9]+ \(GPU/ { for (i = 1; i <= NF; i++) if ($i == "ms") { printf "%s%.0f", sep, $(i - 1); sep = " / " } }
    END { if (sep) printf " ms" }' "$1")
  [ -n "$w" ] && { echo "$w"; return; }
  awk '/\(gpu\) / { s += $(NF - 1) } END { printf "%.0f ms (stages)", s }' "$1"
}
codec_of() {
  awk '$1 == "decode" { d = $2 } $1 == "encode" { e = $2 } END { printf "%.0f / %.0f ms", d, e }' "$1"
}

# run NAME W H GPUS ARGS...: one measured run; a table row
run() {
  local name=$1 g=$4 line wall rc
  shift 4
  util_start
  line=$("$PY" "$here/stream_measure.py" "$tmp/err.$name" "$B" run --device gpu --stream on --profile \
    --gpus "$g" --max-pixels 100000000000 "$@") || die "cannot measure $name"
  util_stop
  read -r wall _ _ rc <<<"$line"
  if [ "$rc" != 0 ]; then
    status=1
    notes+=("- $name failed (exit $rc): $(grep -v '^ ' "$tmp/err.$name" | tail -n 1)")
    say "$name failed: $(tail -n 3 "$tmp/err.$name")"
  fi
  say "$name: $wall s, util $util"
  last_wall=$wall
  sed -n '/^profile/,$p' "$tmp/err.$name" >"$tmp/profile.$name"
}

# pair LABEL PIPELINE_NAME W H IN EXTRA_ARGS -- PIPELINE_ARGS...: --gpus 0, then all; outputs compared
pair() {
  local label=$1 pname=$2 w=$3 h=$4 in=$5 extra=$6 one all t1 same
  shift 7
  one=$tmp/$pname.one.tif all=$tmp/$pname.all.tif
  # shellcheck disable=SC2086
  run "$pname.one" "$w" "$h" 0 $extra "$@" "$in" "$one"
  t1=$last_wall
  rows+=("| $label | $pname | 0 | $t1 s | $(awk -v w="$w" -v h="$h" -v s="$t1" 'BEGIN { printf "%.0f", (s > 0 ? w * h / s / 1e6 : 0) }') | $(busy_of "$tmp/err.$pname.one") | $util | $(codec_of "$tmp/err.$pname.one") | |")
  write_md
  # shellcheck disable=SC2086
  run "$pname.all" "$w" "$h" all $extra "$@" "$in" "$all"
  if [ ! -f "$one" ] || [ ! -f "$all" ]; then same="not compared (a run failed)"
  elif cmp -s "$one" "$all"; then same="identical to --gpus 0 (cmp)"
  elif d=$("$PY" "$here/tiff_digest.py" "$one" "$all" 2>/dev/null | awk '{ print $1 }') &&
       [ "$(wc -l <<<"$d")" = 2 ] && [ "$(sort -u <<<"$d" | wc -l)" = 1 ]; then
    same="the pixels of --gpus 0 (tifffile; strips compressed by card or cores, other bytes)"
  else status=1; same="**differs from --gpus 0**"
  fi
  rows+=("| $label | $pname | all | $last_wall s | $(awk -v w="$w" -v h="$h" -v s="$last_wall" 'BEGIN { printf "%.0f", (s > 0 ? w * h / s / 1e6 : 0) }') | $(busy_of "$tmp/err.$pname.all") | $util | $(codec_of "$tmp/err.$pname.all") | $same; scaling $(awk -v a="$t1" -v b="$last_wall" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }') |")
  local which
  for which in one all; do   # both: the strips the cards took are compared between them
    [ -s "$tmp/profile.$pname.$which" ] && notes+=("" "\`--profile\` of $label, $pname, --gpus \
$([ "$which" = one ] && echo 0 || echo all):" "" '```' "$(cat "$tmp/profile.$pname.$which")" '```')
  done
  write_md
  rm -f "$one" "$all"
}

wanted() { case " ${ONLY:-$1} " in *" $1 "*) return 0 ;; esac; return 1; }
say "making the inputs ($(nproc) cores)"
t_big=0 bytes_big=0 t_huge=0 bytes_huge=0
if wanted big-light || wanted big-heavy || wanted big-heavy-none; then
  read -r t_big bytes_big <<<"$("$PY" "$here/stream_images.py" rgb "$tmp/big.tif" "$big")" || die "cannot make big.tif"
fi
if wanted huge-light || wanted huge-heavy; then
  read -r t_huge bytes_huge <<<"$("$PY" "$here/stream_images.py" gray "$tmp/huge.tif" "$huge_w" "$huge_h")" ||
    die "cannot make huge.tif"
fi
make_note="Inputs: ${big}x${big} RGB deflate TIFF, 32-row strips ($((bytes_big / 1000000)) MB, made in $t_big s); \
${huge_w}x${huge_h} gray tiled deflate BigTIFF ($((bytes_huge / 1000000)) MB, $t_huge s). Outputs: deflate for \
the ${big}x${big} runs, \`--tiff-compression $huge_compression\` for the ${huge_w}x${huge_h} ones."
write_md

if wanted big-light && time_left; then pair "${big}x${big} RGB" light "$big" "$big" "$tmp/big.tif" "" -- "$light"; fi
if wanted big-heavy && time_left; then pair "${big}x${big} RGB" heavy "$big" "$big" "$tmp/big.tif" "" -- -e "$heavy"; fi
if wanted big-heavy-none && time_left; then
  pair "${big}x${big} RGB, no output compression" heavy "$big" "$big" "$tmp/big.tif" "--tiff-compression none" -- -e "$heavy"
fi
rm -f "$tmp/big.tif"
if wanted huge-light && time_left; then
  pair "${huge_w}x${huge_h} gray" light "$huge_w" "$huge_h" "$tmp/huge.tif" "--memory 4G --tiff-compression $huge_compression" -- "$light"
fi
if wanted huge-heavy && time_left; then
  pair "${huge_w}x${huge_h} gray" heavy "$huge_w" "$huge_h" "$tmp/huge.tif" "--memory 4G --tiff-compression $huge_compression" -- -e "$heavy"
fi
rm -f "$tmp/huge.tif"

folder() {  # LABEL PIPELINE: bench/multigpu.sh with nvJPEG
  mkdir -p "$tmp/folder"
  if JPEG_DECODER=gpu MULTIGPU_PIPELINE="$2" "$here/multigpu.sh" "$folder_images" "$tmp/folder" >/dev/null 2>"$tmp/err.folder"; then
    notes+=("" "Folder, $1 (\`bench/multigpu.sh $folder_images\`, \`--jpeg-decoder gpu\`):" "" '```' "$(cat "$tmp/folder/multigpu.txt")" '```')
  else
    status=1
    notes+=("" "- folder, $1: failed: $(tail -n 3 "$tmp/err.folder" "$tmp/folder/multigpu.txt" 2>/dev/null)")
  fi
  write_md
}
if [ "$folder_images" -gt 0 ] && wanted folder-light && time_left; then folder light "grayscale | median radius=1 | convolve kernel=gaussian3"; fi
if [ "$folder_images" -gt 0 ] && wanted folder-heavy && time_left; then folder heavy "$heavy"; fi
time_left || notes+=("- LIMIT_S=$limit_s s reached: the runs after it were left out")
write_md
say "done in $SECONDS s"
cat "$md"
exit $status
