#!/usr/bin/env python3
"""tracereplay against its peers on the same trajectories: agentevals' trajectory match
(`create_trajectory_match_evaluator`, `superset`, arguments `exact`) and Google ADK's
`TrajectoryEvaluator` (`ANY_ORDER`, arguments compared), each judging the 20,000 ten-call
trajectories of `benches/trajectories.py` (`mixed`: a third fail on a changed argument) against
their scenario's eight expected calls, which `check` judges by a `superset` `tool-sequence` with
`argsMatch: exact`. Each tool reads its own format from disk: tracereplay the sealed traces,
the peers their own files (written once, untimed, as their users would keep runs). Every tool
must give the same verdicts, or the figures are not printed.

    python3 benches/peers.py DIR [ROUNDS] [PYTHON]

DIR is made once (the traces, sealed with `tracereplay pack`, and the peers' files beside them).
PYTHON is an interpreter with `agentevals` and `google-adk` installed (default: `python3`):

    python3 -m venv target/peers && target/peers/bin/pip install agentevals google-adk

Rounds alternate the tools (tracereplay cold, and cached, its cache filled once before); each
prints its median wall time and how many times faster than the fastest peer it is. The peers
run as their users run them: one Python process each, judging one trajectory after another.
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "target", "release", "tracereplay")
TRACES = 20000

# The peers' runners: each reads its files, judges every trajectory, prints the passes.
AGENTEVALS = r"""
import json, os, sys
from agentevals.trajectory.match import create_trajectory_match_evaluator
root = sys.argv[1]
judge = create_trajectory_match_evaluator(trajectory_match_mode="superset", tool_args_match_mode="exact")
passed = 0
for scenario in sorted(os.listdir(root)):
    d = os.path.join(root, scenario)
    with open(os.path.join(d, "reference.json")) as f:
        reference = json.load(f)
    for name in sorted(os.listdir(d)):
        if name == "reference.json":
            continue
        with open(os.path.join(d, name)) as f:
            outputs = json.load(f)
        passed += bool(judge(outputs=outputs, reference_outputs=reference)["score"])
print(passed)
"""

ADK = r"""
import json, os, sys
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.evaluator import EvalStatus
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
root = sys.argv[1]
criterion = ToolTrajectoryCriterion(threshold=1.0, match_type=ToolTrajectoryCriterion.MatchType.ANY_ORDER)
judge = TrajectoryEvaluator(eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion))
passed = 0
for scenario in sorted(os.listdir(root)):
    d = os.path.join(root, scenario)
    with open(os.path.join(d, "expected.json")) as f:
        expected = [Invocation.model_validate_json(f.read())]
    for name in sorted(os.listdir(d)):
        if name == "expected.json":
            continue
        with open(os.path.join(d, name)) as f:
            actual = [Invocation.model_validate_json(f.read())]
        result = judge.evaluate_invocations(actual, expected)
        passed += result.overall_eval_status == EvalStatus.PASSED
print(passed)
"""


def calls_of(trace_path):
    """The tool calls of a plain NDJSON trace: (tool, args) in order."""
    calls = []
    with open(trace_path) as f:
        for line in f:
            e = json.loads(line)
            if e.get("kind") == "tool_call":
                calls.append((e["tool"], e["args"]))
    return calls


def openai_messages(calls):
    """A run as agentevals reads it: a user turn, then an assistant turn per call."""
    out = [{"role": "user", "content": "handle my order"}]
    for i, (tool, args) in enumerate(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
        out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return out


def adk_invocation(calls):
    """A run as ADK's evaluators read it: one invocation whose intermediate data holds the calls."""
    return {
        "invocation_id": "run",
        "user_content": {"role": "user", "parts": [{"text": "handle my order"}]},
        "intermediate_data": {"tool_uses": [{"name": t, "args": a} for t, a in calls]},
    }


def make(dirpath):
    """Writes the corpus, seals it, and writes the peers' files beside it."""
    traces = os.path.join(dirpath, "traces")
    subprocess.run([sys.executable, os.path.join(HERE, "trajectories.py"), traces, str(TRACES), "mixed"], check=True)
    peers = {"agentevals": os.path.join(dirpath, "agentevals"), "adk": os.path.join(dirpath, "adk")}
    for scenario in sorted(os.listdir(traces)):
        d = os.path.join(traces, scenario)
        with open(os.path.join(d, f"{scenario}.scenario.json")) as f:
            expected = json.load(f)["oracles"][0]["calls"]
        expected = [(c["tool"], c["args"]) for c in expected]
        for peer in peers.values():
            os.makedirs(os.path.join(peer, scenario), exist_ok=True)
        with open(os.path.join(peers["agentevals"], scenario, "reference.json"), "w") as f:
            json.dump(openai_messages(expected), f)
        with open(os.path.join(peers["adk"], scenario, "expected.json"), "w") as f:
            json.dump(adk_invocation(expected), f)
        names = sorted(n for n in os.listdir(d) if n.endswith(".trace.ndjson"))
        for name in names:
            calls = calls_of(os.path.join(d, name))
            run = name.split(".")[0]
            with open(os.path.join(peers["agentevals"], scenario, f"{run}.json"), "w") as f:
                json.dump(openai_messages(calls), f)
            with open(os.path.join(peers["adk"], scenario, f"{run}.json"), "w") as f:
                json.dump(adk_invocation(calls), f)
        paths = [os.path.join(d, n) for n in names]
        for at in range(0, len(paths), 2000):
            subprocess.run([BIN, "pack", *paths[at : at + 2000]], check=True, stdout=subprocess.DEVNULL)
        for p in paths:
            os.remove(p)


def timed(cmd, env=None, cwd=None):
    """Runs `cmd` with its output to a file (as a CI job keeps a report), read once it is timed:
    a pipe read by this script would time the script's reading of tracereplay's 30 MB report."""
    output = os.path.join(cwd or ".", "output.txt")
    with open(output, "w") as out:
        start = time.perf_counter()
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
        took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"`{' '.join(cmd)}` failed: {done.stderr[-2000:]}")
    with open(output) as out:
        return took, out.read()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    dirpath = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    python = sys.argv[3] if len(sys.argv) > 3 else "python3"
    for module in ("agentevals", "google.adk.evaluation"):
        if subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode != 0:
            sys.exit(f"`{python}` cannot import {module}: install the peers first:\n"
                     "    python3 -m venv target/peers && target/peers/bin/pip install agentevals google-adk\n"
                     "and pass target/peers/bin/python as PYTHON")
    if not os.path.exists(os.path.join(dirpath, "adk")):
        make(dirpath)
    env = dict(os.environ, CI="true")
    # Run in DIR, which holds no baselines: each trace's row is its verdict alone.
    check = [os.path.abspath(BIN), "check", "traces", "-j", "2", "--format", "json"]
    # The result cache filled once, so each cached round finds every row.
    cached = check + ["--cache-dir", "cache"]
    timed(cached, env, dirpath)
    tools = {
        "tracereplay `check -j 2 --no-cache`": (check + ["--no-cache"], env),
        "tracereplay `check -j 2`, cached": (cached, env),
        "agentevals (superset, exact arguments)": ([python, "-c", AGENTEVALS, "agentevals"], None),
        "Google ADK TrajectoryEvaluator (ANY_ORDER)": ([python, "-c", ADK, "adk"], None),
    }
    times = {name: [] for name in tools}
    passes = {}
    for _ in range(rounds):
        for name, (cmd, e) in tools.items():
            took, out = timed(cmd, e, dirpath)
            times[name].append(took)
            passes[name] = json.loads(out)["summary"]["passed"] if name.startswith("tracereplay") else int(out)
    if len(set(passes.values())) != 1:
        sys.exit(f"the tools disagree on how many trajectories pass: {passes}")
    median = {name: statistics.median(t) for name, t in times.items()}
    fastest = min((n for n in tools if not n.startswith("tracereplay")), key=median.get)
    print(f"{rounds} alternating rounds, medians of wall time; {TRACES} trajectories, {passes[fastest]} passing in every tool\n")
    print("| tool | wall | the fastest peer's time ÷ this |")
    print("|---|---|---|")
    for name in tools:
        print(f"| {name} | {median[name]:.3f} s | {median[fastest] / median[name]:.1f}× |")


if __name__ == "__main__":
    main()
