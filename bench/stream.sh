#!/usr/bin/env bash
# Streaming benchmark (issue 11, item 7): pipelines/denoise.pipe through `imgpipe run` on
#   - a 16384x16384 RGB deflate TIFF in 32-row strips (a mosaic of the sample photographs with 2%
#     salt-and-pepper noise), streamed within --memory 256M against the whole-image run (cmp);
#   - a 8192x8192 gray tiled deflate TIFF, streamed against whole, best of RUNS each (cmp);
#   - a 100000x100000 gray tiled deflate BigTIFF (10 gigapixels, made the same way) streamed to a
#     BigTIFF within --memory 2G, its Mpix/s against the 8192x8192 streamed run's;
# each with its wall time, peak host RSS (the kernel's count, from wait4) and peak GPU memory
# (nvidia-smi every 100 ms; "-" without a GPU). The inputs are made first, with every core, and
# their time is printed. Prints a markdown table for bench/RESULTS.md and writes it to
# $OUT/stream.md when OUT is set (rewritten after each run: a run cut short keeps what it measured).
# usage: IMGPIPE_BIN=... bench/stream.sh
#   DEVICE   gpu|cpu|auto: imgpipe's --device (default auto); the device each run reports is shown
#   SCALE    full (default: 16384, 8192, 100000x100000) or small (4096, 2048, 20000x20000)
#   BIG, REF, HUGE   the sizes, overriding SCALE's: BIG and REF sides, HUGE as WxH
#   RUNS     the REF runs are the best of RUNS (default 3)
#   BIG_MEMORY, HUGE_MEMORY   --memory of the streamed BIG and HUGE runs (default 256M, 2G)
#   LIMIT_S  runs not started within this many seconds are left out (default: no limit)
#   PARTS    the runs to make, of big ref huge (default all three)
#   HUGE_CODECS   the HUGE run once for each of these --codecs values (default auto): "auto cpu"
#            sets the cards' strip compression beside the cores against the cores alone
#   HUGE_ENVS   and once for each of these words, each VAR=VALUE pairs joined by commas that the
#            run gets in its environment ("-": none, the default): "- IMGPIPE_TIFF_GPU_READ_BANDS=1
#            IMGPIPE_TIFF_GPU_READ_BANDS=1,IMGPIPE_TIFF_GPU_BAND_GROUP=1" times the switches
#   COMMIT   the commit the binary was built from (default: build-gpu/bin/commit.txt, else git)
#   TMPDIR   where the files go: the HUGE run needs about 1.5 bytes a pixel free
set -u
export LC_ALL=C
B=${IMGPIPE_BIN:?set IMGPIPE_BIN}
out_dir=${OUT:-}
device=${DEVICE:-auto}
runs=${RUNS:-3}
limit_s=${LIMIT_S:-0}
big_memory=${BIG_MEMORY:-256M}
huge_memory=${HUGE_MEMORY:-2G}
parts=" ${PARTS:-big ref huge} "
huge_codecs=${HUGE_CODECS:-auto}
huge_envs=${HUGE_ENVS:--}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
pipe=$src/pipelines/denoise.pipe

say() { printf 'stream: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

case ${SCALE:-full} in
  full) big=16384 ref=8192 huge=100000x100000 ;;
  small) big=4096 ref=2048 huge=20000x20000 ;;
  *) die "SCALE must be full or small, not '$SCALE'" ;;
esac
big=${BIG:-$big}
ref=${REF:-$ref}
huge=${HUGE:-$huge}
huge_w=${huge%x*}
huge_h=${huge#*x}
[[ $big =~ ^[1-9][0-9]*$ && $ref =~ ^[1-9][0-9]*$ ]] || die "BIG and REF must be whole numbers"
[[ $huge =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || die "HUGE must look like 100000x100000"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive whole number"
[[ $limit_s =~ ^[0-9]+$ ]] || die "LIMIT_S must be a whole number of seconds"
case $device in gpu|cpu|auto) ;; *) die "DEVICE must be gpu, cpu or auto, not '$device'" ;; esac
# shellcheck source=bench/python.sh
. "$here/python.sh"
PY=$(bench_python cv2 numpy tifffile) || die "no Python with OpenCV, numpy and tifffile"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
md=$tmp/stream.md
rows=()
notes=()
run_env=()   # the next run's environment (HUGE_ENVS)
status=0   # 1 when a run failed or a streamed output differs from the whole one

mib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }
mpix() { awk -v w="$1" -v h="$2" -v s="$3" 'BEGIN { printf "%.1f", w * h / s / 1e6 }'; }
file_mb() { awk -v b="$(stat -c %s "$1" 2>/dev/null || echo 0)" 'BEGIN { printf "%.0f MB", b / 1e6 }'; }
time_left() { [ "$limit_s" = 0 ] || [ "$SECONDS" -lt "$limit_s" ]; }

gpu_name=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
commit=${COMMIT:-$(cat "$src/build-gpu/bin/commit.txt" 2>/dev/null || git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}

write_md() {
  {
    echo "## Streaming (issue 11): $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, ${gpu_name:-no GPU}, commit $commit"
    echo
    echo "\`bench/stream.sh\` (SCALE=${SCALE:-full}, DEVICE=$device): \`imgpipe run --device $device\` through"
    echo "\`pipelines/denoise.pipe\`, TIFF to TIFF; wall time of the whole process; peak host RSS from wait4;"
    echo "peak GPU memory of the process from nvidia-smi every 100 ms (- : no GPU). ${make_note:-}"
    echo
    echo "| run | wall | Mpix/s | peak host RSS | peak GPU memory | device | output |"
    echo "| --- | --: | --: | --: | --: | --- | --- |"
    printf '%s\n' "${rows[@]}"
    [ ${#notes[@]} -gt 0 ] && { echo; printf '%s\n' "${notes[@]}"; }
  } >"$md"
  [ -n "$out_dir" ] && cp "$md" "$out_dir/stream.md"
}

# measure NAME ARGS...: one imgpipe run; sets wall rss gpu rc and dev (the device it reported).
measure() {
  local name=$1 line
  shift
  line=$("$PY" "$here/stream_measure.py" "$tmp/err.$name" env "${run_env[@]}" "$B" run --device "$device" --max-pixels 100000000000 "$@") ||
    die "cannot measure $name"
  read -r wall rss gpu rc <<<"$line"
  dev=$(grep -o 'device: [A-Z]*' "$tmp/err.$name" | head -n 1 | cut -d' ' -f2)
  [[ "$*" == *"--stream on"* ]] && dev="$dev, bands"
  if [ "$rc" != 0 ]; then
    status=1
    notes+=("- $name failed (exit $rc): $(grep -v '^ ' "$tmp/err.$name" | tail -n 1)")
    say "$name failed (exit $rc): $(tail -n 1 "$tmp/err.$name")"
  fi
  say "$name: ${wall} s, RSS $(mib "$rss"), GPU ${gpu} MiB, $dev"
}

# best NAME RUNS ARGS...: the fastest of RUNS measure runs (its RSS and GPU memory with it).
best() {
  local name=$1 n=$2 i b_wall="" b_rss b_gpu b_dev b_rc
  shift 2
  for ((i = 0; i < n; i++)); do
    measure "$name" "$@"
    if [ -z "$b_wall" ] || awk -v a="$wall" -v b="$b_wall" 'BEGIN { exit !(a < b) }'; then
      b_wall=$wall b_rss=$rss b_gpu=$gpu b_dev=$dev b_rc=$rc
    fi
  done
  wall=$b_wall rss=$b_rss gpu=$b_gpu dev=$b_dev rc=$b_rc
}

row() {  # LABEL W H OUTPUT_NOTE: a table row from the last measure
  local t=- m=- o="failed (below)"
  [ "$rc" = 0 ] && t="$wall s" && m=$(mpix "$2" "$3" "$wall") && o=$4
  rows+=("| $1 | $t | $m | $(mib "$rss") | $gpu$([ "$gpu" = - ] || echo " MiB") | $dev | $o |")
  write_md
}

# A streamed GPU run's TIFF strips are compressed by the card or the cores, whichever is free:
# its bytes vary, its pixels do not.
same_pixels() {
  local d
  d=$("$PY" "$here/tiff_digest.py" "$1" "$2" 2>/dev/null | awk '{ print $1 }') || return 1
  [ "$(wc -l <<<"$d")" = 2 ] && [ "$(sort -u <<<"$d" | wc -l)" = 1 ]
}
verdict() { awk -v v="$1" -v lim="$2" 'BEGIN { print (v + 0 < lim + 0) ? "under 2 GiB: met" : "**over 2 GiB: missed**" }'; }
compare() {  # WHOLE STREAMED: sets compared (and status when they differ)
  if [ ! -f "$1" ] || [ ! -f "$2" ]; then compared="not compared (a run failed)"
  elif cmp -s "$1" "$2"; then compared="identical to whole (cmp)"
  elif same_pixels "$1" "$2"; then compared="the whole run's pixels (tifffile), other bytes"
  else status=1; compared="**differs from whole**"
  fi
}

make_input() {  # KIND PATH SIZE...: prints "SECONDS BYTES"
  "$PY" "$here/stream_images.py" "$@" 2>"$tmp/err.make" || die "cannot make $2: $(tail -n 3 "$tmp/err.make")"
}

# ---- inputs ----
# the HUGE input (deflate level 1) and output take about 0.75 and 0.45 bytes a pixel of photographs
need_kb=$(( (huge_w * huge_h / 1024) * 3 / 2 + (big * big * 3 / 1024) * 2 ))
free_kb=$(df -Pk "$tmp" | awk 'NR == 2 { print $4 }')
[ "$free_kb" -ge "$need_kb" ] || die "$tmp has $((free_kb / 1048576)) GiB free, the runs need about $((need_kb / 1048576)) GiB (set TMPDIR)"
say "making the inputs: ${big}x${big} RGB, ${ref}x${ref} and ${huge} gray ($(nproc) cores)"
part() { [[ $parts == *" $1 "* ]]; }
t_big=0 bytes_big=0 t_ref=0 bytes_ref=0 t_huge=0 bytes_huge=0
part big && read -r t_big bytes_big <<<"$(make_input rgb "$tmp/big.tif" "$big")"
part ref && read -r t_ref bytes_ref <<<"$(make_input gray "$tmp/ref.tif" "$ref" "$ref")"
part huge && read -r t_huge bytes_huge <<<"$(make_input gray "$tmp/huge.tif" "$huge_w" "$huge_h")"
make_note="Inputs made in $SECONDS s: ${big}x${big} RGB $t_big s ($((bytes_big / 1000000)) MB), ${ref}x${ref} gray \
$t_ref s ($((bytes_ref / 1000000)) MB), ${huge} gray $t_huge s ($((bytes_huge / 1000000)) MB; deflate level 1, \
512x512 tiles)."
say "$make_note"
write_md

# ---- runs ----
if part big && time_left; then
  measure big_whole --stream off "$pipe" "$tmp/big.tif" "$tmp/big_whole.tif"
  row "${big}x${big} RGB, whole (\`--stream off\`)" "$big" "$big" "$(file_mb "$tmp/big_whole.tif")"
  big_whole_rss=$rss
  measure big_streamed --stream on --memory "$big_memory" --profile "$pipe" "$tmp/big.tif" "$tmp/big_streamed.tif"
  compare "$tmp/big_whole.tif" "$tmp/big_streamed.tif"
  row "${big}x${big} RGB, streamed (\`--stream on --memory $big_memory\`)" "$big" "$big" "$compared"
  [ "$rc" = 0 ] && notes+=("- ${big}x${big} streamed: peak host RSS $(mib "$rss") (whole: $(mib "$big_whole_rss"))")
  big_profile=$(sed -n '/^profile/,$p' "$tmp/err.big_streamed")
  rm -f "$tmp/big.tif" "$tmp/big_whole.tif" "$tmp/big_streamed.tif"
fi
if part ref && time_left; then
  best ref_whole "$runs" --stream off "$pipe" "$tmp/ref.tif" "$tmp/ref_whole.tif"
  row "${ref}x${ref} gray, whole, best of $runs" "$ref" "$ref" "$(file_mb "$tmp/ref_whole.tif")"
  ref_whole_wall=$wall ref_whole_rc=$rc
  best ref_streamed "$runs" --stream on --profile "$pipe" "$tmp/ref.tif" "$tmp/ref_streamed.tif"
  compare "$tmp/ref_whole.tif" "$tmp/ref_streamed.tif"
  row "${ref}x${ref} gray, streamed, best of $runs" "$ref" "$ref" "$compared"
  [ "$rc" = 0 ] && [ "$ref_whole_rc" = 0 ] && ref_streamed_wall=$wall && notes+=("- ${ref}x${ref}: streamed $ref_streamed_wall s against whole $ref_whole_wall s \
($(awk -v s="$ref_streamed_wall" -v w="$ref_whole_wall" 'BEGIN { printf "%.2fx the whole run'"'"'s speed", w / s }'))")
  write_md
fi
variants=$(for c in $huge_codecs; do for e in $huge_envs; do echo "$c/$e"; done; done)
for variant in $variants; do
  IFS=/ read -r codecs envs <<<"$variant"
  env_note="" run_env=()
  part huge && time_left || continue
  if [ "$envs" != - ]; then IFS=, read -ra run_env <<<"$envs"; env_note=", ${envs//,/, }"; fi
  measure huge_streamed --stream on --memory "$huge_memory" --codecs "$codecs" --profile "$pipe" "$tmp/huge.tif" "$tmp/huge_out.tif"
  check="no output"
  [ -f "$tmp/huge_out.tif" ] && check=$("$PY" -c 'import sys, tifffile
t = tifffile.TiffFile(sys.argv[1]); p = t.pages[0]
print("BigTIFF" if t.is_bigtiff else "classic TIFF", "x".join(map(str, p.shape)))' "$tmp/huge_out.tif" 2>&1 | tail -n 1)
  row "${huge} gray, streamed (\`--stream on --memory $huge_memory --codecs $codecs\`$env_note)" "$huge_w" "$huge_h" \
    "$check, $(file_mb "$tmp/huge_out.tif")"
  if [ "$rc" = 0 ] && [ -n "${ref_streamed_wall:-}" ]; then
    notes+=("- Mpix/s: ${huge} streamed $(mpix "$huge_w" "$huge_h" "$wall") against ${ref}x${ref} streamed \
$(mpix "$ref" "$ref" "$ref_streamed_wall")")
  fi
  huge_profile+=$'\n'"--codecs $codecs$env_note:"$'\n'$(sed -n '/^profile/,$p' "$tmp/err.huge_streamed")
  [ "$rc" = 0 ] && notes+=("- ${huge} streamed, --codecs $codecs$env_note: peak host RSS $(mib "$rss") ($(verdict "$rss" 2097152)), peak GPU memory \
$([ "$gpu" = - ] && echo "- (no GPU)" || echo "$gpu MiB ($(verdict "${gpu#\~}" 2048))")")
  rm -f "$tmp/huge_out.tif"
done
time_left || notes+=("- LIMIT_S=$limit_s s reached: the runs after it were left out")
[ -n "${big_profile:-}" ] && notes+=("" "\`--profile\` of the ${big}x${big} streamed run:" "" '```' "$big_profile" '```')
[ -n "${huge_profile:-}" ] && notes+=("" "\`--profile\` of the ${huge} run:" "" '```' "$huge_profile" '```')
write_md
say "done in $SECONDS s"
cat "$md"
exit $status
