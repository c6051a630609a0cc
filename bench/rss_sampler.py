#!/usr/bin/env python3
"""Runs a command and samples its resident memory (VmRSS) every 0.2 s: peak RSS says how high a
crawl's memory went, this says what it followed on the way (bench/run.sh's long crawl).

    rss_sampler.py OUT -- COMMAND...

OUT gets one line per sample, "<seconds since start> <VmRSS in KiB>". Exits with COMMAND's status.
"""
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    with open(sys.argv[1], "w") as out:
        child = subprocess.Popen(sys.argv[3:])
        start = time.monotonic()
        while True:
            time.sleep(0.2)  # first: at once, the command may not have started yet
            if child.poll() is not None:
                break
            try:
                with open(f"/proc/{child.pid}/status") as status:
                    for line in status:
                        if line.startswith("VmRSS:"):
                            out.write(f"{time.monotonic() - start:.3f} {line.split()[1]}\n")
            except OSError:  # the command has just ended
                pass
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
