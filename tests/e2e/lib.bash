# Shared by the end-to-end tests: counters, expectations, a scratch folder.
set -u
passed=0
failed=0
: "${IMGPIPE_BIN:?run through ctest}"
SRC=${IMGPIPE_SOURCE_DIR:?}
IMAGES=$SRC/samples
TMP=$(mktemp -d "${TMPDIR:-/tmp}/imgpipe-e2e.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# The first Python that has OpenCV: Debian's here, the GPU machine's own there. Found, not imported:
# importing cv2 took 1.2 s, paid by every test that sources this.
PY=${IMGPIPE_PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in /usr/bin/python3 "$(command -v python3)"; do
    if [ -x "$candidate" ] &&
       "$candidate" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('cv2') is None)" 2>/dev/null; then
      PY=$candidate
      break
    fi
  done
  PY=${PY:-/usr/bin/python3}
fi

# require_gpu: exits 77 with the reason unless imgpipe can run a stage on the GPU here.
require_gpu() {
  if ! "$IMGPIPE_BIN" run -q --device gpu -e transpose "$IMAGES/camera.png" "$TMP/.probe.png" 2>"$TMP/.probe.err"; then
    echo "SKIP: no GPU: $(sed 's/^imgpipe: //' "$TMP/.probe.err" | head -n 1)"
    exit 77
  fi
}

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# expect CODE "description" command...: runs it, keeps stderr in $TMP/.stderr, checks the exit code.
expect() {
  local want=$1 what=$2; shift 2
  "$@" >"$TMP/.stdout" 2>"$TMP/.stderr"
  local got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, wanted $want; stderr: $(head -c 400 "$TMP/.stderr")"; fi
}

# says "description" TEXT: the last command's stderr contains TEXT.
says() {
  if grep -qF -- "$2" "$TMP/.stderr"; then ok; else bad "$1: stderr lacks '$2'; it was: $(head -c 400 "$TMP/.stderr")"; fi
}

exists() { if [ -e "$2" ]; then ok; else bad "$1: $2 missing"; fi; }
absent() { if [ -e "$2" ]; then bad "$1: $2 should not exist"; else ok; fi; }
no_temporaries() {
  if ls -A "$2" | grep -q '^\.imgpipe-tmp-'; then bad "$1: temporary files left in $2"; else ok; fi
}
# outputs DIR: the img* files in DIR; wait_outputs DIR N: waits (up to 60 s) until there are N,
# so that a run is cut mid-way however fast the machine, not after a fixed sleep.
outputs() { ls "$1" 2>/dev/null | grep -c '^img' || true; }
wait_outputs() { for _ in $(seq 600); do [ "$(outputs "$1")" -ge "$2" ] && return; sleep 0.1; done; }

# verdicts "what" <<'PYEOF' ... : runs the Python script on stdin, which prints one "ok ..." or
# "FAIL ..." line a check, and counts each here. Fed from a file, not a pipe: a loop at the end of a
# pipe runs in a subshell and its counts are lost. A script that fails or gives no verdict fails.
verdicts() {
  local what=$1 verdict rest given=0
  $PY - >"$TMP/.verdicts" 2>"$TMP/.verdicts.err"
  local status=$?
  while read -r verdict rest; do
    given=$((given + 1))
    if [ "$verdict" = ok ]; then ok; else bad "$what: $verdict $rest"; fi
  done <"$TMP/.verdicts"
  [ "$status" -eq 0 ] || bad "$what: the check script failed (exit $status): $(tail -c 400 "$TMP/.verdicts.err")"
  [ "$given" -gt 0 ] || bad "$what: the check script gave no verdict"
}

# same_image A B: exit 0 when the two image files hold the same pixels (shape, type and values),
# whatever their bytes: GPU codecs compress the same pixels into other bytes than the CPU's.
same_image() {
  $PY - "$1" "$2" <<'PYEOF'
import sys, cv2, numpy as np
a = cv2.imread(sys.argv[1], cv2.IMREAD_UNCHANGED); b = cv2.imread(sys.argv[2], cv2.IMREAD_UNCHANGED)
sys.exit(0 if a is not None and b is not None and a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b) else 1)
PYEOF
}

# A script whose checks never ran has proved nothing: that fails too (a skip exits 77 before).
finish() {
  echo "$passed passed, $failed failed"
  if [ $((passed + failed)) -eq 0 ]; then echo "FAIL: no check ran" >&2; return 1; fi
  [ "$failed" -eq 0 ]
}
