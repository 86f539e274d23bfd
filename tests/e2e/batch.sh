# Folders: mixed formats, subfolders, non-images, a corrupt file, outputs equal to single runs,
# refusing to overwrite inputs, interruption and --resume, bounded memory.
. "$(dirname "$0")/lib.bash"
B=$IMGPIPE_BIN
cd "$TMP"
mkdir -p in/sub/deeper
cp "$IMAGES/astronaut.png" "$IMAGES/camera.png" in/
cp "$IMAGES/hubble_deep_field.jpg" in/sub/
cp "$IMAGES/chessboard_GRAY_U16.tif" in/sub/deeper/
"$B" run -q --device cpu -e transpose "$IMAGES/coffee.png" in/sub/coffee8.tif
echo "not an image" > in/notes.txt
head -c 4000 "$IMAGES/chelsea.png" > in/broken.png
P="grayscale | median radius=1"

expect 1 "folder with a corrupt file" "$B" run --device cpu -r -e "$P" in out
says "corrupt file reported" "in/broken.png: truncated or corrupt PNG"
says "summary" "5 succeeded, 1 failed, 0 skipped (output exists), 1 not images"
for f in astronaut.png camera.png sub/hubble_deep_field.jpg sub/coffee8.tif sub/deeper/chessboard_GRAY_U16.tif; do
  exists "output $f" "out/$f"
  "$B" run -q --device cpu -e "$P" "in/$f" "single.${f##*.}"
  cmp -s "single.${f##*.}" "out/$f" && ok || bad "$f: folder output differs from a single run"
done
absent "no output for the corrupt file" out/broken.png
no_temporaries "output folder" out
mv in/broken.png broken.keep
expect 0 "not recursive" "$B" run --device cpu -e "$P" --format tif in flat
[ "$(ls flat | wc -l)" -eq 2 ] && exists "flat png as tif" flat/camera.tif || bad "flat: $(ls flat)"
expect 0 "--resume skips finished outputs" "$B" run --device cpu -r --resume -e "$P" in out
says "--resume summary" "0 succeeded, 0 failed, 5 skipped (output exists)"
expect 2 "refuses to overwrite inputs" "$B" run --device cpu -e "$P" --format png in in
says "refuses to overwrite inputs" "would overwrite the input"
# an output folder inside the input folder is never read back as input
expect 0 "output inside the input" "$B" run --device cpu -r -e "$P" in in/processed
expect 0 "output inside the input, again" "$B" run --device cpu -r --resume -e "$P" in in/processed
says "output inside the input, again" "0 succeeded, 0 failed, 5 skipped (output exists)"
absent "nothing processed twice" in/processed/processed
rm -rf in/processed
printf '%s\n' "$PWD/in/camera.png" "$PWD/in/sub/hubble_deep_field.jpg" > list.txt
expect 0 "@list" "$B" run --device cpu -e "$P" --format png @list.txt fromlist
exists "@list output" fromlist/hubble_deep_field.png
# --profile on a folder: where a worker's time went, its first image (which makes its buffers) apart
expect 0 "--profile folder" "$B" run --device cpu --profile --jobs 1 -e "$P" --format png @list.txt profiled
says "--profile: the workers' times" "in flight): decode "
says "--profile: a worker's first image" "a worker's first image: decode "
first_decode=$(grep -o "first image: decode [0-9.]*" "$TMP/.stderr" | grep -o "[0-9.]*$")
awk -v ms="${first_decode:-0}" 'BEGIN { exit !(ms > 0) }' && ok || bad "--profile: the first image's decode took '$first_decode' ms"

# 200 images (60 under IMGPIPE_TEST_QUICK, the sanitizer build: the same path, killed after 10):
# killed mid-run, then --resume: every output once and correct, no temporaries.
mkdir -p many resumed_in
for i in $(seq -w 1 200); do cp "$IMAGES/camera.png" "many/img$i.png"; done
n_resumed=200
[ "${IMGPIPE_TEST_QUICK:-0}" -gt 0 ] 2>/dev/null && n_resumed=60
for f in $(ls many | head -n $n_resumed); do cp "many/$f" resumed_in/; done
"$B" run -q --device cpu --jobs 2 -e "median radius=6" resumed_in single200 >/dev/null 2>&1 &
pid=$!
wait_outputs single200 10
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
partial=$(outputs single200)
[ "$partial" -lt $n_resumed ] && ok || bad "the run finished before it was killed; the interruption test proved nothing"
expect 0 "resume after a kill" "$B" run --device cpu --jobs 2 --resume -e "median radius=6" resumed_in single200
[ "$(outputs single200)" -eq $n_resumed ] && ok || bad "after resume: $(ls single200 | wc -l) outputs of $n_resumed"
no_temporaries "after resume" single200
"$B" run -q --device cpu -e "median radius=6" "$IMAGES/camera.png" ref.png
bad_outputs=0
for f in single200/*.png; do cmp -s ref.png "$f" || bad_outputs=$((bad_outputs + 1)); done
[ "$bad_outputs" -eq 0 ] && ok || bad "$bad_outputs outputs differ from a single run after the resume"

# Ctrl-C: stops after the images in flight, exit 1, no temporaries, says how to finish.
"$B" run --device cpu --jobs 2 -e "median radius=6" many interrupted 2>int.err &
pid=$!
wait_outputs interrupted 10
kill -INT $pid
wait $pid
[ $? -eq 1 ] && ok || bad "an interrupted run must exit 1"
grep -q "interrupted: run again with --resume" int.err && ok || bad "no interruption note: $(tail -n 2 int.err)"
[ "$(outputs interrupted)" -lt 200 ] && ok || bad "Ctrl-C: the run finished before the signal; it proved nothing"
no_temporaries "after Ctrl-C" interrupted

# memory stays bounded: peak RSS with 200 images close to that with 20
mkdir -p few && cp many/img00[1-9].png many/img01[0-9].png many/img020.png few/
# (under AddressSanitizer, freed memory waits in a quarantine: keep it small for this measurement)
rss() { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1:thread_local_quarantine_size_kb=64" $PY -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"; }
r20=$(rss "$B" run -q --device cpu --jobs 2 -e "mean radius=2" few m20)
r200=$(rss "$B" run -q --device cpu --jobs 2 -e "mean radius=2" many m200)
[ "$r200" -le $((r20 * 5 / 4 + 8192)) ] && ok || bad "peak RSS grew from $r20 KiB (20 images) to $r200 KiB (200 images)"
# --shard I/N: three copies cover the folder exactly once, each output the same as one run's
# (the folder holds a corrupt file, so a run may exit 1)
"$B" run -q --device cpu -r -e "$P" in full 2>/dev/null
for i in 0 1 2; do
  "$B" run --device cpu -r -e "$P" --shard "$i/3" in "shard$i" 2>"shard$i.err"
  rc=$?
  if [ "$rc" -le 1 ] && grep -q "shard $i/3: " "shard$i.err"; then ok; else bad "shard $i/3: exit $rc: $(tail -n 1 "shard$i.err")"; fi
done
all=$(cd full && find . -type f | sort)
union=$(for i in 0 1 2; do (cd "shard$i" && find . -type f); done | sort)
if [ -n "$all" ] && [ "$all" = "$union" ]; then ok; else bad "shards: the union is not the whole folder"; fi
if [ -z "$(echo "$union" | uniq -d)" ]; then ok; else bad "shards overlap: $(echo "$union" | uniq -d | head -n 3)"; fi
nonempty=0
for i in 0 1 2; do [ -n "$(cd "shard$i" && find . -type f)" ] && nonempty=$((nonempty + 1)); done
if [ "$nonempty" -ge 2 ]; then ok; else bad "the images were not split: $nonempty shard(s) hold them all"; fi
for i in 0 1 2; do
  (cd "shard$i" && find . -type f) | while read -r f; do cmp -s "shard$i/$f" "full/$f" || echo "$f"; done >"diff$i.txt"
  if [ -s "diff$i.txt" ]; then bad "shard $i output differs from the whole run: $(head -n 2 "diff$i.txt")"; else ok; fi
done
expect 2 "bad --shard" "$B" run --device cpu -e "$P" --shard 3/3 in shardbad
expect 2 "--shard on one image" "$B" run --device cpu -e "$P" --shard 0/2 "$IMAGES/camera.png" one.png
finish
