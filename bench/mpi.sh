#!/usr/bin/env bash
# MPI on one host (issue 15): one folder through one imgpipe process and through
# `mpirun -n RANKS imgpipe` (4 by default), whole runs timed, outputs compared byte for byte,
# images/s of each printed (and rank 0's per-rank figures).
#
# usage: bench/mpi.sh IN_FOLDER [OUT_DIR]      (appends to OUT_DIR/mpi.txt, default .)
#   IMGPIPE_BIN  the imgpipe to run (default build-gpu/bin/imgpipe); when ../bundle lies beside its
#                bin/ (scripts/gpu-check build), it runs with those libraries, and libmpi still
#                comes from this machine (imgpipe opens it at run time; mpirun never sees the bundle)
#   MAKE=N       IN_FOLDER missing or empty: first make N 4000x3000 JPEG photographs in it (Python
#                with OpenCV)
#   PIPELINE     the pipeline text (default: pipelines/denoise.pipe)
#   RANKS (4), DEVICE (auto), JOBS (default: each rank its share of the cores), FORMAT (the inputs')
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
in=${1:?usage: bench/mpi.sh IN_FOLDER [OUT_DIR]}
out=${2:-.}
ranks=${RANKS:-4}
bin=${IMGPIPE_BIN:-$root/build-gpu/bin/imgpipe}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
command -v mpirun >/dev/null || { echo "mpi.sh: no mpirun on this machine"; exit 2; }
[ -x "$bin" ] || { echo "mpi.sh: $bin is not built"; exit 2; }

make_photos() {
  local py="" c
  for c in /usr/bin/python3 "$(command -v python3)"; do
    if [ -x "$c" ] && "$c" -c "import cv2" 2>/dev/null; then py=$c; break; fi
  done
  [ -n "$py" ] || { echo "mpi.sh: MAKE needs a Python with OpenCV"; exit 2; }
  "$py" - "$root/samples" "$in" "$1" <<'PYEOF' || exit 2
import cv2, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
photos = [cv2.imread(os.path.join(src, f)) for f in ("astronaut.png", "coffee.png", "chelsea.png")]
for i in range(n):
    img = cv2.resize(photos[i % 3], (4000, 3000), interpolation=cv2.INTER_LINEAR)
    cv2.imwrite(os.path.join(dst, "img%04d.jpg" % i), img if i % 2 else img[:, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])
PYEOF
}
if [ -n "${MAKE:-}" ] && [ -z "$(ls -A "$in" 2>/dev/null)" ]; then make_photos "$MAKE"; fi
[ -d "$in" ] || { echo "mpi.sh: $in is not a folder (MAKE=N makes one)"; exit 2; }

# The bundle reaches imgpipe alone, through this wrapper: mpirun keeps the machine's libraries.
run_bin=$bin
bundle=$(cd "$(dirname "$bin")/.." && pwd)/bundle
if [ -d "$bundle" ]; then
  run_bin=$tmp/imgpipe
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' "$bundle" "$bin" >"$run_bin"
  chmod +x "$run_bin"
fi
mpi=(mpirun -n "$ranks" --bind-to none)   # unbound: each rank takes its share of all the cores
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
[ "$ranks" -gt "$(nproc)" ] && mpi+=(--oversubscribe)
opts=(--device "${DEVICE:-auto}")
[ -n "${JOBS:-}" ] && opts+=(--jobs "$JOBS")
[ -n "${FORMAT:-}" ] && opts+=(--format "$FORMAT")
if [ -n "${PIPELINE:-}" ]; then opts+=(-e "$PIPELINE"); else opts+=("$root/pipelines/denoise.pipe"); fi

# timed NAME CMD...: seconds of the whole command; its stderr kept in $tmp/NAME.err
timed() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$tmp/$name.err" || echo "mpi.sh: $name exited $?: $(grep -v ' images/s, ' "$tmp/$name.err" | tail -n 4)" >&2
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }'
}
t1=$(timed one "$run_bin" run "${opts[@]}" "$in" "$tmp/one")
tn=$(timed ranks "${mpi[@]}" "$run_bin" run "${opts[@]}" "$in" "$tmp/ranks")
images=$(sed -n 's/^imgpipe: \([0-9]*\) succeeded, \([0-9]*\) failed.*/\1 \2/p' "$tmp/one.err" | awk '{ print $1 + $2 }')
differ=$(cd "$tmp/one" && for f in *; do cmp -s "$f" "../ranks/$f" || echo "$f"; done | wc -l)
commit=$(cat "$(dirname "$bin")/commit.txt" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null)
{
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  echo "MPI on one host: $images images in $in, '${PIPELINE:-pipelines/denoise.pipe}', --device ${DEVICE:-auto}," \
       "$(nproc) cores, ${gpu:-no GPU},"
  echo "  $(date -u +%Y-%m-%d), commit ${commit:-?}, $(mpirun --version 2>/dev/null | head -n 1)"
  awk -v n="$images" -v a="$t1" -v b="$tn" -v r="$ranks" 'BEGIN {
    printf "  1 process          %7.2f s  %7.2f images/s\n", a, (a > 0 ? n / a : 0)
    printf "  mpirun -n %-2d       %7.2f s  %7.2f images/s  (%.2fx)\n", r, b, (b > 0 ? n / b : 0), (b > 0 ? a / b : 0) }'
  grep -E '^  (rank [0-9]+|all [0-9]+ ranks)' "$tmp/ranks.err" | sed 's/^/  /'
  echo "  outputs differing between the two runs: $differ of $(ls "$tmp/one" | wc -l)"
} | tee -a "$out/mpi.txt"
[ "$differ" -eq 0 ]
