#!/bin/bash
# Issue 14 item 6: ncu readings of bench_gpu's rows, for explaining misses with measurements.
#   bench/ncu.sh OUT "row substrings, comma separated"
# Runs bench_gpu (its libraries from BUNDLE, the ncu binary untouched) once per row set under Nsight Compute (clocks fixed by ncu, so its durations run
# longer than bench_gpu's events) and writes OUT/ncu.csv (every launch) and OUT/ncu.txt: per kernel,
# its largest launch (bench_gpu also launches on small verification images).
set -u
out=$1 rows=$2
here=$(cd "$(dirname "$0")" && pwd)
build=${IMGPIPE_BUILD_DIR:-$here/../build-gpu}
. "$here/python.sh"
ncu=""
for c in "$(command -v ncu)" /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu; do
    [ -n "$c" ] && [ -x "$c" ] && { ncu=$c; break; }
done
[ -n "$ncu" ] || { echo "ncu.sh: ncu not found" >&2; exit 2; }
py=$(bench_python csv) || { echo "ncu.sh: no python3" >&2; exit 2; }
metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics=$metrics,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
metrics=$metrics,launch__registers_per_thread,launch__grid_size,launch__block_size,smsp__inst_executed.sum
metrics=$metrics,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active
metrics=$metrics,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
metrics=$metrics,l1tex__t_bytes.sum,lts__t_bytes.sum${NCU_EXTRA:+,$NCU_EXTRA}   # NCU_EXTRA: more metrics, into ncu.csv only
mkdir -p "$out/ncu-bench"
IMGPIPE_BENCH_ONLY="$rows" "$ncu" --csv --page raw --print-units base --metrics "$metrics" \
    env LD_LIBRARY_PATH="${BUNDLE:-$build/bundle}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$build/bin/bench_gpu" "$out/ncu-bench" 1 \
    >"$out/ncu.csv" 2>"$out/ncu.err"
status=$?
"$py" - "$out/ncu.csv" >"$out/ncu.txt" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if len(rows) < 3:
    print("ncu.sh: no kernel rows"); sys.exit(0)
head, body = rows[0], rows[2:]
col = {n: i for i, n in enumerate(head)}
def num(r, n):
    try: return float(r[col[n]].replace(',', ''))
    except (KeyError, ValueError): return 0.0
best = {}
for r in body:
    name = r[col["Kernel Name"]][:70]
    if name not in best or num(r, "launch__grid_size") > num(best[name], "launch__grid_size"):
        best[name] = r
print("| kernel | us | DRAM % | SM % | issue % | occupancy % | regs | grid | inst (M) | FMA pipe % | ALU pipe % | DRAM MB |")
print("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |")
for name, r in best.items():
    print("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %.1f | %.1f | %.1f | %.1f |" % (
        name, num(r, "gpu__time_duration.sum") / 1e3, num(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        num(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), num(r, "smsp__issue_active.avg.pct_of_peak_sustained_active"),
        num(r, "sm__warps_active.avg.pct_of_peak_sustained_active"), num(r, "launch__registers_per_thread"),
        num(r, "launch__grid_size"), num(r, "smsp__inst_executed.sum") / 1e6,
        num(r, "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"),
        num(r, "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"),
        (num(r, "dram__bytes_read.sum") + num(r, "dram__bytes_write.sum")) / 1e6))
PY
cat "$out/ncu.txt"
exit $status
