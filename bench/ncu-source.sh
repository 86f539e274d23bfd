#!/bin/bash
# Issue 14 item 6: where one kernel's time goes, instruction by instruction.
#   bench/ncu-source.sh OUT "bench rows" KERNEL_REGEX [SKIP]
# Runs bench_gpu's rows (IMGPIPE_BENCH_ONLY) under Nsight Compute with its source counters for one
# launch of the kernels matching KERNEL_REGEX, after SKIP of them (default 1: bench_gpu's first
# launch of a row checks a small crop against the CPU; the next is on the full image), and writes
# OUT/ncu-source.csv: every SASS instruction with its executions and warp stall samples, by
# reason. Run after `scripts/gpu-check run`, which unpacks the build it times.
set -u
out=$1 rows=$2 kernel=$3 skip=${4:-1}
here=$(cd "$(dirname "$0")" && pwd)
build=${IMGPIPE_BUILD_DIR:-$here/../build-gpu}
ncu=""
for c in "$(command -v ncu)" /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu; do
    [ -n "$c" ] && [ -x "$c" ] && { ncu=$c; break; }
done
[ -n "$ncu" ] || { echo "ncu-source.sh: ncu not found" >&2; exit 2; }
mkdir -p "$out/ncu-source-bench"
IMGPIPE_BENCH_ONLY="$rows" "$ncu" --kernel-name "regex:$kernel" --launch-skip "$skip" --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section LaunchStats -f -o "$out/ncu-source" \
    env LD_LIBRARY_PATH="${BUNDLE:-$build/bundle}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$build/bin/bench_gpu" \
    "$out/ncu-source-bench" 1 >"$out/ncu-source.log" 2>&1 || { tail -5 "$out/ncu-source.log" >&2; exit 1; }
"$ncu" --import "$out/ncu-source.ncu-rep" --page source --csv --print-source sass >"$out/ncu-source.csv" 2>>"$out/ncu-source.log"
status=$?
rm -f "$out/ncu-source.ncu-rep"
echo "ncu-source.sh: $(wc -l <"$out/ncu-source.csv") lines in ncu-source.csv"
exit $status
