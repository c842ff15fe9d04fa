#!/usr/bin/env python3
"""Runs shell commands alternately, N rounds, and prints for each the median and fastest wall
time, the median CPU time (user + system) and the peak resident set size (what `/usr/bin/time -v`
reports as "Maximum resident set size"). Alternating rounds keep a noisy machine's drift out of
the comparison: compare ratios from one invocation, never absolute times across invocations.

    python3 benches/compare.py 15 "zstd -dcq --filelist LIST" "tracereplay check DIR -j 2 --no-cache"
"""
import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    rounds, commands = int(sys.argv[1]), sys.argv[2:]
    wall = {c: [] for c in commands}
    cpu = {c: [] for c in commands}
    rss = {c: 0 for c in commands}
    for _ in range(rounds):
        for c in commands:
            start = time.perf_counter()
            child = subprocess.Popen(c, shell=True, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall[c].append(time.perf_counter() - start)
            cpu[c].append(usage.ru_utime + usage.ru_stime)
            rss[c] = max(rss[c], usage.ru_maxrss)
            if os.waitstatus_to_exitcode(status) not in (0, 1):
                sys.exit(f"`{c}` failed")
    for c in commands:
        print(
            f"wall median {statistics.median(wall[c]):.3f} s, fastest {min(wall[c]):.3f} s; "
            f"CPU median {statistics.median(cpu[c]):.3f} s; peak RSS {rss[c] / 1024:.1f} MB  {c}"
        )


if __name__ == "__main__":
    main()
