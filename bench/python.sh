# Sourced by the bench scripts: bench_python MODULE... prints the first Python that imports every
# module (the system one first: it has OpenCV and tifffile where pyenv's may not); fails if none.
bench_python() {
  local c imports
  imports="import $(IFS=,; echo "$*")"
  for c in /usr/bin/python3 "$(command -v python3)"; do
    if [ -x "$c" ] && "$c" -c "$imports" 2>/dev/null; then echo "$c"; return 0; fi
  done
  return 1
}
