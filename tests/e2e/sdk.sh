# The plugin SDK end to end: install this build into a prefix, build the template out of tree
# against it, run it through the installed imgpipe, pkg-config, and `imgpipe new-plugin`.
# (A plugin's failing plan or run giving a one-line message naming it is checked in cli.sh.)
. "$(dirname "$0")/lib.bash"
: "${IMGPIPE_BUILD_DIR:?run through ctest}"
P=$TMP/prefix
B=$P/bin/imgpipe
cd "$TMP"
unset IMGPIPE_PLUGIN_PATH CMAKE_PREFIX_PATH

# run_logged "description" command...: runs it quietly, shows its output only when it fails.
run_logged() {
  local what=$1; shift
  if "$@" >"$TMP/log" 2>&1; then ok; else bad "$what: $(tail -n 20 "$TMP/log")"; return 1; fi
}

# build_plugin "description" SOURCE_DIR BUILD_DIR: configure, build and test, CPU path only.
build_plugin() {
  run_logged "$1: configure" cmake -S "$2" -B "$3" -DCMAKE_PREFIX_PATH="$P" -DTEMPLATE_CUDA=OFF &&
    run_logged "$1: build" cmake --build "$3" &&
    run_logged "$1: its own tests" ctest --test-dir "$3" --output-on-failure
}

expect 0 "install" cmake --install "$IMGPIPE_BUILD_DIR" --prefix "$P"
for f in bin/imgpipe include/imgpipe/plugin.h lib/cmake/imgpipe/imgpipeConfig.cmake \
         lib/cmake/imgpipe/imgpipeConfigVersion.cmake lib/pkgconfig/imgpipe.pc lib/imgpipe/plugins/grayscale.so; do
  exists "installed $f" "$P/$f"
done

# The installed program finds its plugins with no environment variable and no option.
"$B" plugins >plugins.txt 2>&1
for s in grayscale median transpose; do grep -q "^$s " plugins.txt && ok || bad "installed imgpipe lacks $s: $(head -c 300 plugins.txt)"; done

# The template, copied away from the source tree, builds against the prefix only.
cp -r "$SRC/samples/plugin-template" template
rm -rf template/build
if build_plugin "template" template template/build; then
  expect 0 "template install" cmake --install template/build
  exists "template installed into the plugin folder" "$P/lib/imgpipe/plugins/threshold.so"
fi

"$B" plugins >plugins.txt 2>&1
grep -q "^threshold " plugins.txt && ok || bad "installed imgpipe does not list threshold: $(head -c 300 plugins.txt)"
expect 0 "threshold otsu" "$B" run --device cpu -e "threshold mode=otsu" "$IMAGES/camera.png" otsu.png
expect 0 "threshold value" "$B" run --device cpu -e "threshold value=100" "$IMAGES/camera.png" fixed.png
expect 0 "threshold 16-bit inverted" "$B" run --device cpu -e "threshold value=30000.5 invert=true" \
  "$IMAGES/chessboard_GRAY_U16.tif" inv16.png
$PY - "$IMAGES" <<'PYEOF' && ok || bad "threshold output differs from OpenCV"
import sys, cv2, numpy as np
cam = cv2.imread(sys.argv[1] + "/camera.png", cv2.IMREAD_UNCHANGED)
level, want_otsu = cv2.threshold(cam, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
_, want_fixed = cv2.threshold(cam, 100, 255, cv2.THRESH_BINARY)
board = cv2.imread(sys.argv[1] + "/chessboard_GRAY_U16.tif", cv2.IMREAD_UNCHANGED)
want16 = np.where(board > 30000, 0, 65535).astype(np.uint16)
bad = []
for name, want in (("otsu.png", want_otsu), ("fixed.png", want_fixed), ("inv16.png", want16)):
    got = cv2.imread(name, cv2.IMREAD_UNCHANGED)
    if got is None or got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
        bad.append(name)
if bad:
    print("differ: %s (OpenCV's Otsu level %g)" % (", ".join(bad), level), file=sys.stderr)
sys.exit(1 if bad else 0)
PYEOF

# The plugin's own plan error reaches the user as one line naming it.
"$B" check -e "entropy | threshold" --shape 64x48x1:u8 >float.out 2>float.err
float_rc=$?
[ $float_rc -eq 2 ] && [ "$(wc -l <float.err)" -eq 1 ] &&
  grep -qF -- "-e:1:11: threshold: takes 8- or 16-bit images, not 32-bit float" float.err && ok ||
  bad "float input: exit $float_rc, wanted 2 and one line naming threshold: $(cat float.err)"

# pkg-config gives the include folder of the prefix: enough to build a plugin by hand.
PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags imgpipe >cflags.txt 2>&1 && ok || bad "pkg-config: $(cat cflags.txt)"
mkdir -p bypc
if "${CC:-cc}" -std=c11 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden $(cat cflags.txt) \
     "$SRC/samples/plugin-template/threshold.c" -o bypc/threshold.so 2>bypc.log; then ok; else bad "cc with pkg-config flags: $(head -c 400 bypc.log)"; fi
expect 0 "plugin built with pkg-config flags loads" "$B" plugins --plugin-path bypc threshold

# imgpipe new-plugin writes a template that builds as it is.
"$B" new-plugin mystage "$TMP/mystage" >np.out 2>np.err && ok || bad "new-plugin: exit $?: $(cat np.err)"
grep -q "wrote $TMP/mystage" np.out np.err && ok || bad "new-plugin did not say what it wrote: $(cat np.out np.err)"
exists "new-plugin source" "$TMP/mystage/mystage.c"
build_plugin "new-plugin output" mystage mystage/build &&
  expect 0 "new-plugin stage loads" "$B" plugins --plugin-path mystage/build mystage
"$B" new-plugin other "$TMP/mystage" >np.out 2>np.err && bad "new-plugin wrote into an existing folder" ||
  { grep -q "already exists" np.err && ok || bad "new-plugin existing folder: $(cat np.err)"; }
expect 2 "new-plugin refuses a bad name" "$B" new-plugin "Bad-Name" "$TMP/bad"
absent "new-plugin bad name wrote nothing" "$TMP/bad"
finish
