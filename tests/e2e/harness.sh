# The harness (lib.bash) can fail: a FAIL verdict, a check script that fails or gives no verdict,
# and a run in which no check ran each make a test fail; verdicts all "ok" pass.
. "$(dirname "$0")/lib.bash"
cd "$TMP"

# outcome SCRIPT: the exit status of finish after verdicts on the Python SCRIPT, with fresh counts
# (in a subshell, so that this test's own counts are untouched).
outcome() {
  (passed=0 failed=0; verdicts "probe" <<<"$1"; finish) >/dev/null 2>&1
  echo $?
}

[ "$(outcome 'print("ok one"); print("ok two")')" = 0 ] && ok || bad "verdicts all ok did not pass"
[ "$(outcome 'print("ok one"); print("FAIL two")')" = 1 ] && ok || bad "a FAIL verdict did not fail"
[ "$(outcome 'print("ok one"); raise SystemExit(3)')" = 1 ] && ok || bad "a failing check script did not fail"
[ "$(outcome 'pass')" = 1 ] && ok || bad "a check script without a verdict did not fail"
[ "$( (passed=0 failed=0; finish) >/dev/null 2>&1; echo $?)" = 1 ] && ok || bad "finish passed with no check run"
finish
