# Folders under mpirun (issue 15), on this one host: with 2 ranks and with 4 (oversubscribed) the
# outputs are byte-identical to one process's, rank 0 alone reports (counts, failures, images/s
# per rank); -r, --format, --jobs, --resume and @LIST as in one process; a rank killed mid-run
# (mpirun's default abort, and --enable-recovery, where the others finish and rank 0 names the
# lost images) then --resume completes the folder; Ctrl-C (SIGINT to mpirun) and SIGUSR1 stop
# every rank after its images in flight. Skipped, in one line, without mpirun or MPI in the build.
# IMGPIPE_TEST_QUICK=1 (the sanitizer build): of the fault runs only --enable-recovery and SIGUSR1,
# not the 4-rank TIFF run and its --resume, and 3 ranks where the others run 4.
# The ranks meet mpirun's default abort and Ctrl-C as the SIGTERM it passes on, which takes the
# same handler (cli.c: on_interrupt) and stop path as SIGUSR1; what those two add is Open MPI's
# timing, which the normal build checks.
. "$(dirname "$0")/lib.bash"
B=$IMGPIPE_BIN
if ! command -v mpirun >/dev/null; then echo "skipped: no mpirun (Open MPI: openmpi-bin)"; exit 77; fi
MPI=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
# Under the sanitizers, what Open MPI keeps at exit is not ours: suppressed by its libraries'
# names, which needs whole stacks (its libraries have no frame pointers).
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$SRC/tests/e2e/mpi.lsan:print_suppressions=0"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
cd "$TMP"
mkdir -p in/sub/deeper
cp "$IMAGES/astronaut.png" "$IMAGES/camera.png" in/

if ! "$B" --version | grep -q "MPI built in"; then
  expect 2 "no MPI: mpirun refused" "${MPI[@]}" -n 2 "$B" run --device cpu -e grayscale in out
  [ "$(grep -c "built without MPI" "$TMP/.stderr")" -eq 1 ] && ok || bad "no MPI: rank 0 alone should say so: $(cat "$TMP/.stderr")"
  absent "no MPI: nothing written" out
  [ "$failed" -eq 0 ] || { finish; exit 1; }
  echo "skipped: built without MPI (checked only that a run under mpirun is refused)"
  exit 77
fi

# The program never links libmpi: it is opened at run time, and only under mpirun.
if readelf -d "$B" 2>/dev/null | grep -q 'NEEDED.*libmpi'; then bad "imgpipe links libmpi"; else ok; fi

cp "$IMAGES/hubble_deep_field.jpg" in/sub/
cp "$IMAGES/chessboard_GRAY_U16.tif" in/sub/deeper/
"$B" run -q --device cpu -e transpose "$IMAGES/coffee.png" in/sub/coffee8.tif
for i in 1 2 3 4 5 6; do
  "$B" run -q --device cpu -e "median radius=$i" "$IMAGES/chelsea.png" "in/sub/chelsea$i.png"
  "$B" run -q --device cpu -e "mean radius=$i" "$IMAGES/camera.png" "in/sub/deeper/camera$i.jpg"
done
echo "not an image" > in/notes.txt
head -c 4000 "$IMAGES/chelsea.png" > in/broken.png
P="grayscale | median radius=1"
n_images=$(find in -type f ! -name notes.txt ! -name broken.png | wc -l)

# same_tree A B: the same files, byte for byte
same_tree() {
  local what=$1 a=$2 b=$3
  if [ "$(cd "$a" && find . -type f | sort)" != "$(cd "$b" && find . -type f | sort)" ]; then
    bad "$what: files differ: $(diff <(cd "$a" && find . -type f | sort) <(cd "$b" && find . -type f | sort) | head -c 300)"
    return
  fi
  local differ
  differ=$(cd "$a" && find . -type f | while read -r f; do cmp -s "$f" "$OLDPWD/$b/$f" || echo "$f"; done)
  [ -z "$differ" ] && ok || bad "$what: differ from one process: $differ"
}

expect 1 "one process" "$B" run --device cpu -r -e "$P" in ref
expect 1 "2 ranks" "${MPI[@]}" -n 2 "$B" run --device cpu -r -e "$P" in out2
same_tree "2 ranks" ref out2
says "2 ranks: summary" "2 ranks: $n_images succeeded, 1 failed, 0 skipped (output exists), 1 not images"
[ "$(grep -c 'imgpipe: in/broken.png: truncated or corrupt PNG' "$TMP/.stderr")" -eq 1 ] && ok ||
  bad "2 ranks: the failure is reported once: $(grep broken "$TMP/.stderr")"
says "2 ranks: failure in the summary" "  failed: in/broken.png: truncated or corrupt PNG"
[ "$(grep -c 'device:' "$TMP/.stderr")" -eq 1 ] && [ "$(grep -c 'succeeded' "$TMP/.stderr")" -eq 1 ] && ok ||
  bad "2 ranks: only rank 0 speaks: $(head -c 600 "$TMP/.stderr")"
done_by_ranks=$(sed -n 's/^  rank [01] ([^)]*): \([0-9]*\) done.*/\1/p' "$TMP/.stderr" | awk '{ s += $1 } END { print s + 0 }')
[ "$done_by_ranks" -eq "$n_images" ] && ok || bad "2 ranks: the ranks' lines add up to $done_by_ranks, not $n_images"
says "2 ranks: total speed" "  all 2 ranks: "

quick=0
[ "${IMGPIPE_TEST_QUICK:-0}" -gt 0 ] 2>/dev/null && quick=1
# ranks: the several-rank runs' size; 3 under IMGPIPE_TEST_QUICK, where each rank's start under the
# sanitizers (whole stacks for Open MPI's leak suppressions) takes 1.2 s on 2 cores
ranks=4
[ $quick -eq 1 ] && ranks=3
# IMGPIPE_TEST_QUICK: not run; several workers a rank are run below ("large messages"), and 4
# ranks with --resume by the fault runs (13 of the sanitized test's 73 s).
if [ $quick -eq 0 ]; then
  expect 1 "one process, tif" "$B" run --device cpu -r --format tif -e "$P" in ref_tif
  expect 1 "4 ranks, --jobs 2, tif" "${MPI[@]}" -n 4 "$B" run --device cpu -r --jobs 2 --format tif -e "$P" in out4
  same_tree "4 ranks, tif" ref_tif out4
  says "4 ranks: summary" "4 ranks: $n_images succeeded, 1 failed"
  expect 1 "4 ranks, --resume" "${MPI[@]}" -n 4 "$B" run --device cpu -r --resume --format tif -e "$P" in out4
  says "4 ranks, --resume" "4 ranks: 0 succeeded, 1 failed, $n_images skipped (output exists)"
  same_tree "4 ranks after --resume" ref_tif out4
fi
mv in/broken.png broken.keep
expect 0 "not recursive" "${MPI[@]}" -n 2 "$B" run --device cpu -e "$P" in flat
[ "$(ls flat | wc -l)" -eq 2 ] && ok || bad "not recursive: $(ls flat)"
printf '%s\n' "$PWD/in/camera.png" "$PWD/in/sub/chelsea3.png" "$PWD/in/sub/deeper/camera2.jpg" > list.txt
expect 0 "@list, $ranks ranks" "${MPI[@]}" -n $ranks "$B" run --device cpu --format png -e "$P" @list.txt fromlist
cmp -s ref/sub/chelsea3.png fromlist/chelsea3.png && ok || bad "@list: chelsea3.png differs from one process"
expect 0 "--shard 1/3, one process" "$B" run --device cpu -r --shard 1/3 -e "$P" in shard_ref
expect 0 "--shard 1/3, 2 ranks" "${MPI[@]}" -n 2 "$B" run --device cpu -r --shard 1/3 -e "$P" in shard2
[ "$(find shard_ref -type f | wc -l)" -gt 0 ] && ok || bad "--shard 1/3: empty shard, nothing compared"
same_tree "--shard 1/3" shard_ref shard2
expect 2 "one image under mpirun" "${MPI[@]}" -n 2 "$B" run -e "$P" in/camera.png one.png
[ "$(grep -c 'must be a folder' "$TMP/.stderr")" -eq 1 ] && ok || bad "one image: rank 0 alone says why: $(cat "$TMP/.stderr")"

# The fault tests: a slow pipeline, one image in flight per rank. The folder is sized from the
# speed of $ranks ranks here, so that each run is cut mid-way on any machine, even one twice as fast as
# measured: about 1 s of images where the cut stops the ranks at once (--enable-recovery,
# SIGUSR1), 3 s where mpirun passes it on after 1 s (a rank killed) and 6 s after 2 s (Ctrl-C);
# the folder grows from one to the next, and never holds fewer than 100 images.
SLOW="median radius=6"
mkdir -p many
for i in $(seq 1000 1099); do cp "$IMAGES/camera.png" "many/img$i.png"; done
"$B" run -q --device cpu -e "$SLOW" "$IMAGES/camera.png" slow_ref.png
expect 0 "$ranks ranks, 100 images" "${MPI[@]}" -n $ranks "$B" run --device cpu --jobs 1 -e "$SLOW" many all4
busy=$(grep -cE '^  rank [0-9]+ \([^)]*\): [1-9][0-9]* done' "$TMP/.stderr")
[ "$busy" -eq $ranks ] && ok || bad "$ranks ranks: not every rank processed images: $(grep '^  rank' "$TMP/.stderr")"
[ "$(ls all4 | wc -l)" -eq 100 ] && ok || bad "$ranks ranks: $(ls all4 | wc -l) outputs of 100"
rate=$(sed -n "s/^  all $ranks ranks: \([0-9.]*\) images\/s/\1/p" "$TMP/.stderr")
# images SECONDS: as many images as the ranks take that long here, 100 to 3000
images() { awk -v r="${rate:-0}" -v s="$1" 'BEGIN { n = int(r * s); print (n < 100 ? 100 : (n > 3000 ? 3000 : n)) }'; }
# grow_many N: many/ holds N images (it only grows; a finished scenario's folder is complete)
grow_many() {
  local have
  have=$(ls many | wc -l)
  [ "$1" -gt "$have" ] && for i in $(seq $((1000 + have)) $((999 + $1))); do cp "$IMAGES/camera.png" "many/img$i.png"; done
  N=$(ls many | wc -l)
}

# Answers past Open MPI's 4 KB eager limit: 64 images with long output paths in one answer (a rank
# asks for twice its --jobs, at most 64), the 100 images here.
long=$(printf 'a_long_folder_name_so_that_each_answer_of_rank_0_is_large_%.0s' 1 2 3)
"$B" run -q --device cpu -e grayscale many gray_ref
expect 0 "large messages" "${MPI[@]}" -n 3 "$B" run -q --device cpu --jobs 40 -e grayscale many "$long"
same_tree "large messages" gray_ref "$long"

# start NAME MPIRUN_OPTIONS...: the run of many/ into NAME in the background, under a time limit;
# mpirun's pid in $mpirun_pid, stderr in NAME.err.
start() {
  local name=$1; shift
  timeout -k 5 300 "${MPI[@]}" "$@" -n $ranks "$B" run --device cpu --jobs 1 -e "$SLOW" many "$name" 2>"$name.err" &
  guard=$!
  mpirun_pid=""
  for _ in $(seq 200); do
    mpirun_pid=$(pgrep -P "$guard" | head -n 1)
    [ -n "$mpirun_pid" ] && break
    sleep 0.05
  done
}
rank_pid() {
  local c
  for c in $(pgrep -P "$mpirun_pid"); do
    tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$c"; return; }
  done
}
# check_partial WHAT DIR: cut mid-run, and whatever is there is whole and right
check_partial() {
  local n bad_files
  n=$(outputs "$2")
  [ "$n" -gt 0 ] && [ "$n" -lt $N ] && ok || bad "$1: $n of $N outputs: the run was not cut mid-way"
  bad_files=$(for f in "$2"/img*; do cmp -s slow_ref.png "$f" || echo "$f"; done)
  [ -z "$bad_files" ] && ok || bad "$1: outputs differ from one process: $bad_files"
  [ -z "$(ls -A "$2" | grep -v '^img' | grep -v '^\.imgpipe-tmp-')" ] && ok || bad "$1: stray files: $(ls -A "$2")"
}
# resume_completes WHAT DIR [RANKS]: --resume finishes the folder, every output right
resume_completes() {
  expect 0 "$1: --resume" "${MPI[@]}" -n "${3:-$ranks}" "$B" run -q --device cpu --resume -e "$SLOW" many "$2"
  local bad_files
  bad_files=$(for f in many/*; do cmp -s slow_ref.png "$2/${f#many/}" || echo "$f"; done)
  [ -z "$bad_files" ] && ok || bad "$1: after --resume, missing or wrong: $(echo "$bad_files" | head -n 5)"
  no_temporaries "$1: after --resume" "$2"
}

# --enable-recovery: the job goes on without the dead rank; rank 0 names its lost images.
grow_many "$(images 1)"
start recovered --enable-recovery
wait_outputs recovered 20
victim=$(rank_pid 2)
[ -n "$victim" ] && kill -9 "$victim"
wait "$guard"
summary=$(grep ' ranks: .* succeeded' recovered.err)
succeeded=$(echo "$summary" | sed -n 's/.*ranks: \([0-9]*\) succeeded, \([0-9]*\) failed.*/\1/p')
lost=$(echo "$summary" | sed -n 's/.*ranks: \([0-9]*\) succeeded, \([0-9]*\) failed.*/\2/p')
[ -n "$succeeded" ] && [ $((succeeded + lost)) -eq $N ] && [ "$lost" -ge 1 ] && ok ||
  bad "recovery: the others should finish: '$summary'"
[ "$(grep -c "^  failed: .*lost: rank 2 (pid $victim on " recovered.err)" -eq "${lost:-0}" ] && ok ||
  bad "recovery: the lost images should be named: $(grep -c 'lost: rank 2' recovered.err) lines for $lost"
grep -q "^  rank 2 (.*; lost" recovered.err && ok || bad "recovery: rank 2 should be marked lost"
[ "$(outputs recovered)" -ge "${succeeded:-$N}" ] && ok || bad "recovery: $(outputs recovered) outputs for $succeeded"
resume_completes "recovery" recovered

# check_stop WHAT NAME SIGNAL [MPIRUN_OPTIONS...]: SIGNAL to mpirun mid-run stops every rank
# after its images in flight, with the note, and --resume then completes the folder.
check_stop() {
  local what=$1 name=$2 signal=$3
  shift 3
  start "$name" "$@"
  wait_outputs "$name" 20
  kill -"$signal" "$mpirun_pid"
  wait "$guard"
  [ $? -ne 0 ] && ok || bad "$what: mpirun should fail"
  grep -q "interrupted: run again with --resume" "$name.err" && ok || bad "$what: no note: $(tail -n 3 "$name.err")"
  check_partial "$what" "$name"
  no_temporaries "$what" "$name"
  resume_completes "$what" "$name"
}

# SIGUSR1 to mpirun reaches every rank at once: the stop of Ctrl-C, without a deadline.
check_stop "SIGUSR1" usr1 USR1

# A rank killed: by default mpirun ends the whole job (the ranks get SIGTERM after
# odls_base_sigkill_timeout, 1 s, and SIGKILL after as long again).
if [ $quick -eq 0 ]; then
  grow_many "$(images 3)"
  start killed
  wait_outputs killed 20
  victim=$(rank_pid 1)
  [ -n "$victim" ] && kill -9 "$victim"
  wait "$guard"
  [ $? -ne 0 ] && ok || bad "kill: mpirun should fail when a rank is killed"
  check_partial "kill" killed
  resume_completes "kill" killed 2
fi

# Ctrl-C: mpirun passes SIGTERM on after odls_base_sigkill_timeout (2 s here, so that even a slow
# machine finishes the images in flight before the SIGKILL that follows as long after).
if [ $quick -eq 0 ]; then
  grow_many "$(images 6)"
  check_stop "Ctrl-C" interrupted INT --mca odls_base_sigkill_timeout 2
else
  echo "IMGPIPE_TEST_QUICK: mpirun's default abort and Ctrl-C not run (their stop is SIGUSR1's, run above)"
fi
finish
