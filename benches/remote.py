#!/usr/bin/env python3
"""`check` of a corpus from an S3 server on loopback against the same corpus on disk.

    cargo build --release --features remote
    python3 benches/remote.py CORPUS_DIR [ROUNDS] [TRACEREPLAY]

Starts moto's S3 server (`tests/cli/s3/server.py`, with the Python that has moto: TRACEREPLAY_PYTHON
or target/test-venv), uploads CORPUS_DIR to the bucket `bench`, and runs, alternately for ROUNDS
rounds (default 3), under CI and with `-j 2`:

- `check CORPUS_DIR --no-cache` (the traces on disk);
- `check s3://bench SCENARIOS --no-cache` (the traces in the bucket, the scenarios on disk);
- `check s3://bench SCENARIOS`, the cache filled by a run before the rounds (a fresh runner with a
  restored cache: it lists the bucket and reads nothing).

Prints each command's median wall time, traces per second, CPU time and peak resident set size,
and how many objects the server served. Compare ratios from one invocation only.
"""
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

root = pathlib.Path(__file__).resolve().parent.parent


def main() -> None:
    corpus = pathlib.Path(sys.argv[1]).resolve()
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    binary = sys.argv[3] if len(sys.argv) > 3 else str(root / "target/release/tracereplay")
    python = os.environ.get("TRACEREPLAY_PYTHON", str(root / "target/test-venv/bin/python"))
    traces = sum(1 for _ in corpus.rglob("*.trace.ndjson*"))
    work = pathlib.Path(tempfile.mkdtemp(prefix="tracereplay-remote-bench-"))
    scenarios = work / "scenarios"
    for s in corpus.rglob("*.scenario.json"):
        target = scenarios / s.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(s, target)
    log = open(work / "s3.log", "w")
    started = time.perf_counter()
    server = subprocess.Popen(
        [python, str(root / "tests/cli/s3/server.py"), f"bench={corpus}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    said = json.loads(server.stdout.readline())
    print(f"uploaded {traces} traces in {time.perf_counter() - started:.1f} s", flush=True)
    env = dict(os.environ)
    env.update(
        CI="true",
        AWS_ENDPOINT_URL=said["endpoint"],
        AWS_ALLOW_HTTP="true",
        AWS_ACCESS_KEY_ID=said["access_key"],
        AWS_SECRET_ACCESS_KEY=said["secret_key"],
        AWS_REGION="us-east-1",
        XDG_CACHE_HOME=str(work / "user-cache"),
    )
    env.pop("TRACEREPLAY_CACHE_KEY", None)
    commands = {
        "local, cold": [binary, "check", str(corpus), "-j", "2", "--no-cache", "-q"],
        "s3, cold": [binary, "check", "s3://bench", str(scenarios), "-j", "2", "--no-cache", "-q"],
        "s3, cached": [binary, "check", "s3://bench", str(scenarios), "-j", "2", "-q"],
    }
    subprocess.run(commands["s3, cached"], env=env, cwd=work, stdout=subprocess.DEVNULL, check=False)
    wall = {c: [] for c in commands}
    cpu = {c: [] for c in commands}
    rss = {c: 0 for c in commands}
    gets = {c: 0 for c in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            before = served(work / "s3.log")
            start = time.perf_counter()
            child = subprocess.Popen(argv, env=env, cwd=work, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(usage.ru_utime + usage.ru_stime)
            rss[name] = max(rss[name], usage.ru_maxrss)
            gets[name] = served(work / "s3.log") - before
            if os.waitstatus_to_exitcode(status) not in (0, 1):
                sys.exit(f"`{' '.join(argv)}` failed")
    for name in commands:
        w = statistics.median(wall[name])
        print(
            f"{name:12} {w:7.2f} s  {traces / w:9.0f} traces/s  cpu {statistics.median(cpu[name]):6.2f} s"
            f"  peak {rss[name] / 1024:6.1f} MB  objects read {gets[name]}"
        )
    server.stdin.close()
    server.wait()
    shutil.rmtree(work)


def served(log: pathlib.Path) -> int:
    """Objects (GET of a key) the server has served so far."""
    with open(log) as f:
        return sum(1 for line in f if '"GET /bench/' in line)


if __name__ == "__main__":
    main()
