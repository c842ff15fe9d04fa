"""The tracereplay pytest plugin: record an agent's model requests once, replay them in CI, and
fail a test with the oracle's evidence when what the agent did changed.

A test marked ``@pytest.mark.tracereplay(scenario="weather")`` gets the ``tracereplay``
fixture: base URLs for the OpenAI and Anthropic clients (``OPENAI_BASE_URL`` and
``ANTHROPIC_BASE_URL`` are set for the test too), with the run's session already named. After
the test body the session is finished, and the run is judged against its scenario and approved
baseline by ``tracereplay check`` — the same code as in CI. See docs/pytest.md.
"""

import hashlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from . import binary

try:
    import fcntl
except ImportError:  # Windows: the set's notes are counted without a lock
    fcntl = None

MODES = ("once", "none", "all", "new")
#: How long a server may take to start, a session to finish, a run to be judged (seconds).
DEADLINE = 60
RUN_KEY = pytest.StashKey()
FAILURE_KEY = pytest.StashKey()
PLUGIN_KEY = pytest.StashKey()


def pytest_addoption(parser):
    group = parser.getgroup("tracereplay", "tracereplay: record once, replay in CI")
    group.addoption(
        "--tracereplay-mode",
        choices=MODES,
        default=None,
        help="once: record when no recording exists, else replay (the default off CI); "
        "none: replay only (the default under CI); all: record again; "
        "new: replay, and record what the recording lacks",
    )
    group.addoption(
        "--tracereplay-upstream",
        default=None,
        help="where recording forwards requests (default https://api.openai.com, or the "
        "marker's upstream)",
    )
    group.addoption(
        "--tracereplay-dir",
        default=None,
        help="where recordings are (default: the first of tracereplay.toml's paths, else "
        "`traces` beside the test file)",
    )
    group.addoption(
        "--tracereplay-trials",
        type=int,
        default=None,
        metavar="K",
        help="run each tracereplay test K times, as trials 1..K of its case, judged as a trial "
        "set under the scenario's `trials` policy (default 1)",
    )
    group.addoption(
        "--tracereplay-dev-raw-prompts",
        action="store_true",
        default=False,
        help="developer opt-in: also keep the raw text of prompts in a sidecar",
    )
    for name, help_text in [
        ("tracereplay_mode", "the record mode (as --tracereplay-mode)"),
        ("tracereplay_upstream", "the upstream recording forwards to"),
        ("tracereplay_dir", "where recordings are"),
        ("tracereplay_trials", "trials per test (as --tracereplay-trials)"),
    ]:
        parser.addini(name, help_text, default=None)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "tracereplay(scenario, case=None, upstream=None): record or replay this test's agent "
        "run with tracereplay and judge it against the scenario",
    )
    plugin = Plugin(config)
    config.stash[PLUGIN_KEY] = plugin
    config.add_cleanup(plugin.close)


def pytest_report_header(config):
    plugin = config.stash.get(PLUGIN_KEY, None)
    if plugin is None:
        return None
    keyed = "keyed (TRACEREPLAY_HASH_KEY)" if os.environ.get("TRACEREPLAY_HASH_KEY") else "unkeyed"
    return f"tracereplay: mode {plugin.mode}, prompts hashed {keyed}, {binary()}"


def _truthy(value):
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


class Plugin:
    """The session's servers (started when first needed, shared by every test) and settings."""

    def __init__(self, config):
        self.config = config
        option = config.getoption("--tracereplay-mode") or config.getini("tracereplay_mode")
        if option and option not in MODES:
            raise pytest.UsageError(f"tracereplay_mode `{option}` is not one of {', '.join(MODES)}")
        self.mode = option or ("none" if _truthy(os.environ.get("CI")) else "once")
        trials = config.getoption("--tracereplay-trials") or config.getini("tracereplay_trials") or 1
        try:
            self.trials = int(trials)
        except ValueError:
            self.trials = 0
        if self.trials < 1:
            raise pytest.UsageError(f"tracereplay trials `{trials}` must be a whole number, 1 or more")
        self.root = Path(str(config.rootpath))
        # Replayed runs are written inside the project (so that `check` keeps a pending
        # baseline of their drift for `tracereplay baseline review`), afresh each session; the
        # trials each test ran are noted under `sets`, so that the trial completing a set judges
        # it. Under pytest-xdist the workers share both, which the controller clears.
        work = self.root / ".tracereplay" / "pytest"
        self.replayed = work / "replayed"
        self.sets = work / "sets"
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            shutil.rmtree(self.replayed, ignore_errors=True)
            shutil.rmtree(self.sets, ignore_errors=True)
        self.servers = {}
        self.work = Path(tempfile.mkdtemp(prefix="tracereplay-pytest-"))

    def setting(self, option, ini):
        return self.config.getoption(option) or self.config.getini(ini)

    def recordings(self, test_file):
        """Where recordings are: the option, the project file's first path, else `traces`
        beside the test file."""
        given = self.setting("--tracereplay-dir", "tracereplay_dir")
        if given:
            return (self.root / given).resolve()
        for directory in [self.root, *self.root.parents]:
            project = directory / "tracereplay.toml"
            if project.is_file():
                paths = _project_paths(project.read_text(encoding="utf-8"))
                if paths:
                    return (directory / paths[0]).resolve()
                break
        return (Path(test_file).parent / "traces").resolve()

    def server(self, kind, directory, upstream):
        key = (kind, str(directory), upstream)
        server = self.servers.get(key)
        if server is not None and not server.alive():
            raise RunError(f"the tracereplay {kind} server stopped during the session:\n{server.stderr()}")
        if server is None:
            args = self.server_args(kind, directory, upstream)
            server = Server(args, cwd=self.root, work=self.work)
            self.servers[key] = server
        return server

    def server_args(self, kind, directory, upstream):
        hashing = [] if os.environ.get("TRACEREPLAY_HASH_KEY") else ["--unkeyed"]
        raw = ["--dev-raw-prompts"] if self.config.getoption("--tracereplay-dev-raw-prompts") else []
        if kind == "record":
            return ["record", "--upstream", upstream, "--out", str(directory), *hashing, *raw]
        if kind == "rerecord":
            return ["record", "--upstream", upstream, "--out", str(directory), "--replace", *hashing, *raw]
        args = ["replay", "serve", str(directory), "--record", str(self.replayed), *raw]
        if kind == "replay-then-live":
            args += ["--upstream", upstream]
        return args

    def note_trial(self, run):
        """Notes that `run`, a trial, was written; the paths of its whole set once every trial
        of it is, else None: the trial that completes a set judges it."""
        return self.note(run.scenario, run.case, run.trial, str(run.written))

    def note(self, scenario, case, trial, written):
        """Notes trial `trial` of a set: `written` where it was written, None when it was not
        needed (the set was settled). The written paths of the whole set once every trial of it
        is noted, else None."""
        tag = _set_tag(scenario, case)
        self.sets.mkdir(parents=True, exist_ok=True)
        note = {"scenario": scenario, "case": case, "trial": trial, "written": written}
        path = self.sets / f"{tag}.{trial}.json"
        # Noted and counted under a lock shared by the xdist workers: exactly one trial — the
        # one whose note makes the set whole — judges it.
        with open(self.sets / f"{tag}.lock", "a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            path.write_text(json.dumps(note), encoding="utf-8")
            notes = _notes(self.sets, f"{tag}.*.json")
        if len(notes) < self.trials:
            return None
        return [n["written"] for n in notes if n.get("written")]

    def settled(self, scenario, case):
        """`tracereplay trials next` over the trials of this set written so far, when further
        trials could not change what the set comes to: a sequential policy's set is settled, or
        a `trials.drift` design has shown a regression; else None."""
        notes = _notes(self.sets, f"{_set_tag(scenario, case)}.*.json")
        written = [n["written"] for n in notes if n.get("written")]
        if not written:
            return None
        out = subprocess.run(
            [binary(), "trials", "next", f"{scenario}/{case}", *written, "--json"],
            cwd=str(self.root),
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
        try:
            answer = json.loads(out.stdout) if out.returncode == 0 else {}
        except ValueError:
            answer = {}
        # A trial that cannot be judged is said by that trial's own judging, not here.
        drift = answer.get("drift") or {}
        stops = answer.get("max") is not None or drift.get("regression_at") is not None
        return answer if stops and answer.get("settled") else None

    def judge_paths(self, paths, name):
        """`tracereplay check` of `paths`: the failure text, or None."""
        out = subprocess.run(
            [binary(), "check", *map(str, paths), "--format", "json"],
            cwd=str(self.root),
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
        try:
            report = json.loads(out.stdout)
        except ValueError:
            return f"`tracereplay check` of {name} did not report (exit {out.returncode}):\n{out.stderr}"
        if out.returncode == 0:
            return None
        explained = _explain_cases(report.get("cases", [])) + _explain(report.get("results", []))
        return explained or f"`tracereplay check` exited {out.returncode}:\n{out.stderr}"

    def unjudged(self):
        """Each trial set of this session that not all its trials reached (deselected, or
        failed before they were written): `scenario/case`, and how many did."""
        sets = {}
        for note in _notes(self.sets, "*.json"):
            sets.setdefault((note["scenario"], note["case"]), []).append(note)
        return [(f"{s}/{c}", len(n)) for (s, c), n in sorted(sets.items()) if len(n) < self.trials]

    def close(self):
        for server in self.servers.values():
            server.stop()
        self.servers.clear()
        shutil.rmtree(self.work, ignore_errors=True)


def _set_tag(scenario, case):
    return hashlib.sha256(f"{scenario}\0{case}".encode()).hexdigest()[:24]


def _notes(directory, pattern):
    notes = []
    for path in sorted(directory.glob(pattern)):
        try:
            notes.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass
    return notes


def pytest_terminal_summary(terminalreporter, config):
    """A trial set that not all its trials reached was not judged: said, never passed quietly."""
    plugin = config.stash.get(PLUGIN_KEY, None)
    if plugin is None or plugin.trials < 2 or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for name, ran in plugin.unjudged():
        terminalreporter.write_line(
            f"tracereplay: {name}: {ran} of {plugin.trials} trials written, so the trial set was "
            "not judged",
            yellow=True,
        )


def _project_paths(text):
    """The `paths` of a project file's top level (a TOML list of strings)."""
    try:
        import tomllib  # Python 3.11+

        return [str(p) for p in tomllib.loads(text).get("paths", [])]
    except ImportError:
        match = re.search(r"(?m)^paths\s*=\s*\[([^\]]*)\]", text)
        return re.findall(r"""["']([^"']+)["']""", match.group(1)) if match else []


class RunError(Exception):
    """The plugin could not record, replay or judge a run: a test error, not a hang."""


class ConnectionLost(RunError):
    """A server did not answer at all."""


class Server:
    """A tracereplay server process on a free loopback port, its output read by a thread."""

    def __init__(self, args, cwd, work):
        self.args = args
        self.log = tempfile.NamedTemporaryFile(dir=work, prefix="server-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [binary(), *args],
            cwd=str(cwd),
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        #: A request to it failed to connect: it is taken for dead, even before the process
        #: has been reaped.
        self.broken = False
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise RunError(f"`tracereplay {' '.join(args)}` did not start within {DEADLINE} s:\n{self.stderr()}")
            if line is None:
                raise RunError(f"`tracereplay {' '.join(args)}` exited before listening:\n{self.stderr()}")
            if line.startswith("listening on "):
                self.url = line.split("listening on ", 1)[1].split()[0]
                return

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def alive(self):
        return self.proc.poll() is None and not self.broken

    def stderr(self):
        try:
            return Path(self.log.name).read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _post(url, body):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=DEADLINE) as answer:
            return answer.read()
    except urllib.error.HTTPError as e:
        raise RunError(f"POST {url}: {e.code} {e.read().decode(errors='replace')}") from None
    except (urllib.error.URLError, OSError) as e:
        raise ConnectionLost(f"POST {url}: {e}") from None


def _segment(name):
    """A name as tracereplay writes it in a file path (lowercased; the ids this plugin makes are
    of `[a-z0-9._-]`, which are written as they are)."""
    return name.lower()


class Run:
    """One test's agent run: what its client points at, and how it ends.

    ``openai_base_url`` and ``anthropic_base_url`` name the run's session; ``report(*events)``
    sends events only the runtime knows (approvals, messages, the final answer);
    ``finish(final_answer=None, status=None)`` ends the run early (the plugin finishes it after
    the test otherwise).
    """

    def __init__(self, plugin, scenario, case, directory, upstream, trial=None):
        self.plugin, self.scenario, self.case, self.trial = plugin, scenario, case, trial
        self.recording = directory / _segment(scenario) / f"{_segment(case)}.trace.ndjson.zst"
        if trial is not None:
            self.recording = self.recording.parent / _segment(case) / f"{trial}.trace.ndjson.zst"
        self.name = f"{scenario}/{case}" + (f" trial {trial}" if trial is not None else "")
        mode = plugin.mode
        exists = self.recording.is_file()
        if mode == "none" and not exists:
            raise RunError(
                f"no recording of {self.name} at `{self.recording}` (mode none, the default "
                "under CI): record it with `pytest --tracereplay-mode=once` and commit it"
            )
        if mode == "all":
            kind = "rerecord"
        elif not exists:
            kind = "record"
        else:
            kind = "replay-then-live" if mode == "new" else "replay"
        self.kind = kind
        self.recorded = kind in ("record", "rerecord")
        server = plugin.server(kind, directory, upstream)
        #: The server this run's session is on (its process: `server.proc`).
        self.server = server
        prefix = "record" if self.recorded else "replay"
        self.base = f"{server.url}/{prefix}/{scenario}/{case}"
        if trial is not None:
            self.base += f"/trial/{trial}"
        self.openai_base_url = f"{self.base}/v1"
        self.anthropic_base_url = self.base
        self.finished = False
        #: Where the run was written, once it was (as the server's `finish` says).
        self.written = None

    def report(self, *events):
        _post(f"{self.base}/tracereplay/v1/events", list(events))

    def finish(self, final_answer=None, status=None):
        if self.finished:
            return
        events = []
        if final_answer is not None:
            events.append({"kind": "final_answer", "text": final_answer})
        if status is not None:
            events.append({"kind": "run_end", "status": status})
        try:
            answer = _post(f"{self.base}/tracereplay/v1/finish", events)
        except ConnectionLost:
            self.finished = True
            self.server.broken = True
            raise
        self.finished = True
        try:
            ended = json.loads(answer)
        except ValueError:
            ended = {}
        if not ended.get("recorded_to"):
            why = ended.get("not_recorded") or answer.decode(errors="replace")
            raise RunError(f"the run of {self.name} was not recorded: {why}")
        self.written = self.plugin.root / ended["recorded_to"]
        if self.kind == "replay-then-live" and _went_live(self.written):
            # `new`: what the recording lacked was recorded live; the whole run replaces it.
            os.replace(self.written, self.recording)
            self.written = self.recording

    def judge(self):
        """Judges the written run as `check` does — a trial, with its set once the set is
        complete; the failure text, or None."""
        paths = [self.written]
        if self.trial is not None:
            paths = self.plugin.note_trial(self)
            if paths is None:
                return None
        return self.plugin.judge_paths(paths, self.name)


def _explain_cases(cases):
    """Each failing or blocking trial set: its verdict and why, the oracles that flip, its
    drift."""
    lines = []
    for case in cases:
        if case.get("verdict") == "pass" and not case.get("blocking"):
            continue
        lines.append(
            f"tracereplay: {case.get('scenario')}/{case.get('case')} {case.get('verdict')}: "
            f"{case.get('passed')} of {case.get('trials')} trials pass — {case.get('reason')}"
        )
        for o in case.get("flaky_oracles", []):
            lines.append(f"E   flaky {o.get('oracle')}: passed {o.get('passed')} of {o.get('of')} trials")
        for d in case.get("drift", []) or []:
            lines.append(f"E   drift {d.get('category')}: {d.get('detail') or d.get('message')}")
    return "\n".join(lines) + ("\n" if lines else "")


def _went_live(trace):
    out = subprocess.run([binary(), "cat", str(trace)], capture_output=True, text=True, timeout=DEADLINE)
    return "replay went live at request" in out.stdout


def _explain(rows):
    """A failing row as pytest shows an assertion: each failing oracle with its deciding
    events, each blocking drift, and the trace's hash."""
    lines = []
    for row in rows:
        if row.get("verdict") == "pass" and not row.get("blocking"):
            continue
        trial = f" trial {row['trial']}" if row.get("trial") is not None else ""
        lines.append(f"tracereplay: {row.get('scenario')}/{row.get('case')}{trial} {row.get('verdict')}")
        for o in row.get("oracles", []):
            if o.get("verdict") != "pass":
                seqs = ", ".join(str(s) for s in o.get("evidence", []))
                lines.append(f"E   {o.get('verdict')} {o.get('type')}: {o.get('message')}")
                if seqs:
                    lines.append(f"E       deciding events: seq {seqs}")
        for d in row.get("drift", []):
            lines.append(f"E   drift {d.get('category')}: {d.get('detail') or d.get('message')}")
        lines.append(f"    trace {row.get('path')} ({row.get('content_hash')})")
    return "\n".join(lines)


def _case_of(name, trial=None):
    """A case id from a test's name, without the trial: `test_weather[paris-trial2]` →
    `test_weather-paris`."""
    if trial is not None:
        name = re.sub(rf"(?<=[\[-])trial{re.escape(trial)}(?=[\]-])", "", name)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "default"


def pytest_generate_tests(metafunc):
    """`--tracereplay-trials K`: each tracereplay test runs as trials 1..K of its case."""
    plugin = metafunc.config.stash.get(PLUGIN_KEY, None)
    marked = metafunc.definition.get_closest_marker("tracereplay") is not None
    wanted = "tracereplay_trial" in metafunc.fixturenames
    if plugin is not None and plugin.trials > 1 and marked and wanted:
        trials = [str(k) for k in range(1, plugin.trials + 1)]
        metafunc.parametrize("tracereplay_trial", trials, ids=[f"trial{k}" for k in trials])


@pytest.fixture
def tracereplay_trial():
    """The trial this test runs as (`--tracereplay-trials`), or None."""
    return None


@pytest.fixture
def tracereplay(request, monkeypatch, tracereplay_trial):
    """The test's run: its base URLs, the session named; finished and judged after the test."""
    marker = request.node.get_closest_marker("tracereplay")
    if marker is None:
        raise pytest.UsageError(
            f"{request.node.nodeid} uses the tracereplay fixture without "
            "@pytest.mark.tracereplay(scenario=...)"
        )
    scenario = marker.kwargs.get("scenario") or (marker.args[0] if marker.args else None)
    if not scenario:
        raise pytest.UsageError(f"{request.node.nodeid}: @pytest.mark.tracereplay needs a scenario")
    plugin = request.config.stash[PLUGIN_KEY]
    trial = tracereplay_trial
    case = marker.kwargs.get("case") or _case_of(request.node.name, trial)
    upstream = (
        marker.kwargs.get("upstream")
        or plugin.setting("--tracereplay-upstream", "tracereplay_upstream")
        or "https://api.openai.com"
    )
    if trial is not None:
        # A sequential policy's set is settled once further trials could not change its verdict,
        # and a drift design's once a look shows a regression: the rest are not recorded (nor
        # needed to replay), and count as noted.
        answer = plugin.settled(scenario, case)
        if answer is not None:
            paths = plugin.note(scenario, case, trial, None)
            failure = paths and plugin.judge_paths(paths, f"{scenario}/{case}")
            if failure:
                request.node.stash[FAILURE_KEY] = failure
                yield None
                return
            regression = (answer.get("drift") or {}).get("regression_at")
            why = (
                f"a regression at look {regression} after {answer['trials']} trial(s)"
                if regression is not None
                else f"{answer['verdict']} after {answer['trials']} trial(s), up to {answer['max']}"
            )
            pytest.skip(f"tracereplay: {scenario}/{case} is settled ({why}): trial {trial} is not needed")
    try:
        run = Run(plugin, scenario, case, plugin.recordings(request.node.fspath), upstream, trial)
    except RunError as e:
        # The test fails (not errors) with it, before its body runs.
        request.node.stash[FAILURE_KEY] = str(e)
        yield None
        return
    monkeypatch.setenv("OPENAI_BASE_URL", run.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", run.anthropic_base_url)
    request.node.stash[RUN_KEY] = run
    yield run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """After the test body: the run finished and judged; a failure fails the test."""
    failure = item.stash.get(FAILURE_KEY, None)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    try:
        result = yield
    except BaseException:
        # The test failed on its own: its run is still finished, and a trial still counts in
        # its set — whose verdict, when this trial completes it, is shown beside the failure.
        run = item.stash.get(RUN_KEY, None)
        if run is not None and not run.finished:
            try:
                run.finish()
                verdict = run.judge() if run.trial is not None else None
                if verdict:
                    item.add_report_section("call", "tracereplay", verdict)
            except (RunError, subprocess.TimeoutExpired):
                pass
        raise
    run = item.stash.get(RUN_KEY, None)
    if run is not None:
        try:
            run.finish()
            failure = run.judge()
        except (RunError, subprocess.TimeoutExpired) as e:
            pytest.fail(f"tracereplay: {e}", pytrace=False)
        if failure:
            pytest.fail(failure, pytrace=False)
    return result
