# One process measured for bench/stream.sh: wall time, peak resident memory (the kernel's own
# count for that child, from wait4) and peak GPU memory (nvidia-smi polled every 100 ms for the
# process; "-" when there is no GPU).
# usage: stream_measure.py STDERR_FILE COMMAND...   prints "WALL_S RSS_KB GPU_MIB EXIT"
import os
import shutil
import subprocess
import sys
import threading
import time

QUERY = ["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]


def poll_gpu(smi, pid, stop, peak):
    """peak['pid']: the most the process held; peak['all']: the most all compute processes held,
    for a container whose process ids nvidia-smi does not see."""
    while not stop.is_set():
        try:
            text = subprocess.run([smi] + QUERY, capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.SubprocessError):
            text = ""
        total = 0
        for line in text.splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != 2 or not fields[1].isdigit():
                continue
            total += int(fields[1])
            if fields[0] == str(pid):
                peak["pid"] = max(peak["pid"], int(fields[1]))
        peak["all"] = max(peak["all"], total)
        stop.wait(0.1)


def has_gpu(smi):
    if not smi:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def main():
    err_path, cmd = sys.argv[1], sys.argv[2:]
    smi = shutil.which("nvidia-smi")
    gpu = has_gpu(smi)
    peak = {"pid": 0, "all": 0}
    stop = threading.Event()
    with open(err_path, "wb") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        poller = threading.Thread(target=poll_gpu, args=(smi, proc.pid, stop, peak), daemon=True)
        if gpu:
            poller.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    if gpu:
        poller.join()
    if not gpu:
        gpu_mib = "-"
    elif peak["pid"] or not peak["all"]:
        gpu_mib = str(peak["pid"])
    else:
        gpu_mib = "~%d" % peak["all"]  # the process was not seen by its id: all compute processes
    print("%.3f %d %s %d" % (wall, usage.ru_maxrss, gpu_mib, proc.returncode))


if __name__ == "__main__":
    main()
