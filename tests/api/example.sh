# The C API's example (examples/api) built against the installed SDK, both ways a user would:
# find_package(imgpipe) with imgpipe::imgpipe, and pkg-config imgpipe-api; each run, finding the
# plugins beside the installed libimgpipe.so with no environment variable.
set -u
: "${IMGPIPE_BUILD_DIR:?run through ctest}" "${IMGPIPE_SOURCE_DIR:?run through ctest}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
P=$TMP/prefix
unset IMGPIPE_PLUGIN_PATH CMAKE_PREFIX_PATH
fail() { echo "FAILED: $*" >&2; exit 1; }

cmake --install "$IMGPIPE_BUILD_DIR" --prefix "$P" >"$TMP/log" 2>&1 || fail "install: $(tail -5 "$TMP/log")"
LIB=$(dirname "$(find "$P" -name libimgpipe.so | head -n 1)")
[ -f "$LIB/libimgpipe.so" ] && [ -d "$LIB/imgpipe/plugins" ] || fail "no libimgpipe.so beside imgpipe/plugins under $P"
nm -D --defined-only "$LIB/libimgpipe.so" | awk '{print $3}' | grep -v '^imgpipe_' | grep -q . &&
  fail "libimgpipe.so exports more than the API: $(nm -D --defined-only "$LIB/libimgpipe.so" | grep -v ' imgpipe_' | head -5)"

# check_run PROGRAM: it runs, prints what the example prints, and writes the file.
check_run() {
  "$1" "$IMGPIPE_SOURCE_DIR/samples/coffee.png" "$TMP/out.png" >"$TMP/run.txt" 2>&1 || fail "$1: $(cat "$TMP/run.txt")"
  for want in "a typo is reported at <text>:1:13, suggesting 'median'" "in memory: 640x480 3-channel in, 640x480 1-channel out" \
              "into caller memory: ok" "wrote $TMP/out.png" "median: "; do
    grep -qF "$want" "$TMP/run.txt" || fail "$1 did not print '$want': $(cat "$TMP/run.txt")"
  done
  [ -s "$TMP/out.png" ] || fail "$1 wrote no $TMP/out.png"
  rm -f "$TMP/out.png"
}

cp -r "$IMGPIPE_SOURCE_DIR/examples/api" "$TMP/example"
cmake -S "$TMP/example" -B "$TMP/example/build" -DCMAKE_PREFIX_PATH="$P" >"$TMP/log" 2>&1 || fail "configure: $(tail -20 "$TMP/log")"
cmake --build "$TMP/example/build" >"$TMP/log" 2>&1 || fail "build: $(tail -20 "$TMP/log")"
check_run "$TMP/example/build/api_example"

PC=$(PKG_CONFIG_PATH="$LIB/pkgconfig" pkg-config --cflags --libs imgpipe-api) || fail "pkg-config imgpipe-api"
cc -std=c11 -Wall -Wextra -Werror -o "$TMP/api_example_pc" "$TMP/example/api_example.c" $PC -Wl,-rpath,"$LIB" ||
  fail "build with pkg-config ($PC)"
check_run "$TMP/api_example_pc"
# docs/API.md shows the example as it is built here
awk '/^```c$/{on=1; next} /^```$/{on=0} on' "$IMGPIPE_SOURCE_DIR/docs/API.md" | cmp -s - "$IMGPIPE_SOURCE_DIR/examples/api/api_example.c" ||
  fail "docs/API.md's example differs from examples/api/api_example.c"
echo "api example: ok (find_package and pkg-config)"
