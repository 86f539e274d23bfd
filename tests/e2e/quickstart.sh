# The README's two quick-start lines: exactly two, the second is what CI runs, and the first
# works as written in a fresh copy of the project (installs nothing new here, builds, runs),
# building no test or benchmark.
. "$(dirname "$0")/lib.bash"
mapfile -t lines < <(sed -n '/^## Quick start/,/^## /p' "$SRC/README.md" | grep -E '^    [^ ]')
[ "${#lines[@]}" -eq 2 ] && ok || bad "README's quick start has ${#lines[@]} command lines, not 2"
line1=$(echo "${lines[0]:-}" | sed 's/^ *//')
line2=$(echo "${lines[1]:-}" | sed 's/^ *//')
grep -qxF "$line2" "$SRC/.ci/run" && ok || bad ".ci/run does not run the README's test line: $line2"

if [ "${IMGPIPE_SKIP_QUICKSTART:-0}" = 1 ]; then
  echo "quick-start build skipped in this suite (it runs in the normal build's suite)"
  finish; exit $?
fi
copy=$TMP/fresh
# Under run-tests' compiler cache the copy lies below the cache's base folder (in the ignored
# build/ of the source), so that its compiles are found there; a cached object is what the
# same compile gives, so the check is no weaker.
if [ -n "${CCACHE_BASEDIR:-}" ] && [ "$(cd "$CCACHE_BASEDIR" && pwd -P)" = "$(cd "$SRC" && pwd -P)" ]; then
  copy=$SRC/build-quickstart
  rm -rf "$copy"
  trap 'rm -rf "$TMP" "$copy"' EXIT
fi
mkdir -p "$copy"
(cd "$SRC" && git ls-files -co --exclude-standard -z | xargs -0 tar cf -) | (cd "$copy" && tar xf -)
(cd "$copy" && bash -c "$line1") >"$TMP/qs.log" 2>&1 && ok || { bad "quick-start line 1 failed"; tail -n 30 "$TMP/qs.log" >&2; }
out=$(echo "$line1" | awk '{print $NF}')
# the first line builds what the sample needs: no test or benchmark
built=$(cd "$copy/build/bin" 2>/dev/null && ls | grep -E '^(test_|gpu_test_|bench_)' | head -n 3)
[ -z "$built" ] && ok || bad "quick-start line 1 built tests or benchmarks: $built"
exists "quick-start output" "$copy/$out"
$PY - "$copy/samples/astronaut.png" "$copy/$out" <<'PYEOF' && ok || bad "denoised sample differs from OpenCV"
import sys, cv2, numpy as np
g = cv2.cvtColor(cv2.imread(sys.argv[1], cv2.IMREAD_COLOR), cv2.COLOR_BGR2GRAY)
want = cv2.filter2D(cv2.medianBlur(g, 3), -1, np.outer([1, 2, 1], [1, 2, 1]) / 16.0, borderType=cv2.BORDER_REFLECT_101)
got = cv2.imread(sys.argv[2], cv2.IMREAD_UNCHANGED)
sys.exit(0 if got is not None and got.shape == want.shape and np.abs(got.astype(int) - want).max() <= 1 else 1)
PYEOF
finish
