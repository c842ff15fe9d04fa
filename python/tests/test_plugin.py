"""The pytest plugin's own tests, with pytest's `pytester`: each record mode, CI, a failing
oracle's message, drift → pending baseline → `baseline accept`, the Anthropic SDK, streamed and
not, pytest-xdist, trials judged as a set, and a server that dies mid-session. The agents are
the official OpenAI and Anthropic SDKs' tool loops; the model is a loopback server here
(`Model`): no test touches the network.

Run from the repository's tests (tests/cli/pytest_plugin.rs) in a virtual environment where
the wheel is installed: `pytest -p pytester python/tests/test_plugin.py`.
"""

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import tracereplay

pytest_plugins = ["pytester"]

SCENARIO = {
    "id": "weather", "title": "weather", "risk": "High",
    "oracles": [{"type": "tool-args", "tool": "weather", "args": {"city": "Paris"}},
                {"type": "final-answer-contains", "value": "sunny"}],
}

AGENT = '''
import json, os
QUESTION = "What is the weather in Paris?"
TOOLS = [{"type": "function", "function": {"name": "weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]

def tool(city):
    return os.environ.get("WEATHER_RESULT", "sunny, 21 C")

def openai_agent(stream=False):
    from openai import OpenAI
    client = OpenAI(api_key="none")
    messages = [{"role": "system", "content": "You answer weather questions."},
                {"role": "user", "content": QUESTION}]
    while True:
        if stream:
            text, calls = "", {}
            for chunk in client.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True):
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for c in delta.tool_calls or []:
                    slot = calls.setdefault(c.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] += c.id or ""
                    slot["name"] += (c.function.name or "") if c.function else ""
                    slot["arguments"] += (c.function.arguments or "") if c.function else ""
            msg = {"role": "assistant", "content": text or None}
            if calls:
                msg["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for c in calls.values()]
        else:
            m = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
            msg = m.model_dump(exclude_none=True)
        messages.append(msg)
        if not msg.get("tool_calls"):
            return msg["content"]
        for call in msg["tool_calls"]:
            city = json.loads(call["function"]["arguments"])["city"]
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": tool(city)})

def anthropic_agent(stream=False):
    from anthropic import Anthropic
    client = Anthropic(api_key="none")
    tools = [{"name": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    messages = [{"role": "user", "content": QUESTION}]
    while True:
        args = dict(model="m", max_tokens=100, system="You answer weather questions.", messages=messages, tools=tools)
        if stream:
            with client.messages.stream(**args) as s:
                reply = s.get_final_message()
        else:
            reply = client.messages.create(**args)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        uses = [b for b in reply.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in reply.content if b.type == "text")
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u.id, "content": tool(u.input["city"])} for u in uses]})
'''


class Model(ThreadingHTTPServer):
    """A loopback model: `weather(city)` first, then the answer once the result is back —
    for OpenAI Chat Completions and Anthropic Messages, streamed and not."""

    city = "Paris"
    answer = "It is sunny in Paris, 21 C."
    #: When set, the final answers given in turn (one per run), instead of `answer`.
    answers = None

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests = 0
        self.finals = 0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def next_answer(self):
        if not self.answers:
            return self.answer
        self.finals += 1
        return self.answers[(self.finals - 1) % len(self.answers)]

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.server.requests += 1
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        anthropic = self.path.endswith("/messages")
        last = body["messages"][-1]
        done = last["role"] == "tool" or (
            anthropic and isinstance(last["content"], list)
            and any(b.get("type") == "tool_result" for b in last["content"]))
        args = json.dumps({"city": self.server.city})
        self.answer = self.server.next_answer() if done else None
        if anthropic:
            self.anthropic(body, done, args)
        else:
            self.openai(body, done, args)

    def send(self, payload, stream):
        data = payload.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if stream else "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def openai(self, body, done, args):
        stream = body.get("stream")
        if done:
            msg, finish = {"role": "assistant", "content": self.answer}, "stop"
        else:
            msg, finish = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": args}}]}, "tool_calls"
        head = {"id": "chatcmpl-1", "created": 1, "model": body["model"]}
        if not stream:
            return self.send(json.dumps({**head, "object": "chat.completion", "choices": [
                {"index": 0, "message": msg, "finish_reason": finish}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}}), False)
        delta = {"role": "assistant", "content": msg["content"]}
        if not done:
            delta["tool_calls"] = [{"index": 0, **msg["tool_calls"][0]}]
        chunks = [{**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                  {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
        self.send("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n", True)

    def anthropic(self, body, done, args):
        stream = body.get("stream")
        block = ({"type": "text", "text": self.answer} if done else
                 {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": json.loads(args)})
        stop = "end_turn" if done else "tool_use"
        usage = {"input_tokens": 12, "output_tokens": 6}
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                   "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not stream:
            return self.send(json.dumps(message), False)
        start = {**message, "content": [], "stop_reason": None}
        if done:
            first, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": self.answer}
        else:
            first = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
            delta = {"type": "input_json_delta", "partial_json": args}
        events = [("message_start", {"type": "message_start", "message": start}),
                  ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": first}),
                  ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                  ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                  ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 6}}),
                  ("message_stop", {"type": "message_stop"})]
        self.send("".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events), True)


@pytest.fixture
def model():
    m = Model()
    yield m
    m.shutdown()


@pytest.fixture
def project(pytester):
    pytester.makefile(".toml", tracereplay='paths = ["traces"]\n')
    (pytester.path / "traces" / "weather").mkdir(parents=True)
    (pytester.path / "traces" / "weather" / "weather.scenario.json").write_text(json.dumps(SCENARIO))
    pytester.makepyfile(agent=AGENT)
    return pytester


def write_test(pytester, body, name="test_agent"):
    pytester.makepyfile(**{name: "import pytest\nfrom agent import *\n\n" + body})


def run(pytester, *args, ci=False, **env):
    """pytest in a subprocess, with CI set or cleared and `env` set."""
    os.environ.pop("CI", None)
    for k in ("WEATHER_RESULT",):
        os.environ.pop(k, None)
    if ci:
        os.environ["CI"] = "true"
    os.environ.update(env)
    try:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    finally:
        for k in ["CI", *env]:
            os.environ.pop(k, None)


TEST = '''
@pytest.mark.tracereplay(scenario="weather")
def test_paris(tracereplay):
    assert "sunny" in openai_agent()
'''


def recording(pytester, case="test_paris"):
    return pytester.path / "traces" / "weather" / f"{case}.trace.ndjson.zst"


def test_once_records_then_replays_without_the_model(project, model):
    write_test(project, TEST)
    first = run(project, f"--tracereplay-upstream={model.url}")
    first.assert_outcomes(passed=1)
    assert recording(project).is_file() and model.requests == 2
    model.shutdown()
    again = run(project, f"--tracereplay-upstream={model.url}")
    again.assert_outcomes(passed=1)
    assert model.requests == 2


def test_none_is_the_default_under_ci_and_names_the_recording_to_make(project, model):
    write_test(project, TEST)
    result = run(project, f"--tracereplay-upstream={model.url}", ci=True)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no recording of weather/test_paris at*traces/weather/test_paris.trace.ndjson.zst*"])
    assert model.requests == 0 and not recording(project).exists()


def test_all_records_again_and_new_records_only_what_is_missing(project, model):
    write_test(project, TEST)
    run(project, f"--tracereplay-upstream={model.url}").assert_outcomes(passed=1)
    before = model.requests
    run(project, f"--tracereplay-upstream={model.url}", "--tracereplay-mode=all").assert_outcomes(passed=1)
    assert model.requests == before + 2
    # `new`: replayed, nothing missing, so the model is not asked.
    run(project, f"--tracereplay-upstream={model.url}", "--tracereplay-mode=new").assert_outcomes(passed=1)
    assert model.requests == before + 2


def test_a_failing_oracle_fails_the_test_with_its_evidence(project, model):
    model.answer = "It is raining in Paris."
    write_test(project, '''
@pytest.mark.tracereplay(scenario="weather")
def test_paris(tracereplay):
    openai_agent()
''')
    result = run(project, f"--tracereplay-upstream={model.url}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*tracereplay: weather/test_paris fail*",
        "*fail final-answer-contains: final answer lacks `sunny`*",
        "*deciding events: seq *",
        "*trace *traces/weather/test_paris.trace.ndjson.zst (b3:*",
    ])


def test_drift_writes_a_pending_baseline_that_accept_approves(project, model):
    write_test(project, TEST)
    run(project, f"--tracereplay-upstream={model.url}").assert_outcomes(passed=1)
    approve = subprocess.run([tracereplay.binary(), "baseline", "approve"], cwd=project.path,
                             capture_output=True, text=True, env={**os.environ, "CI": ""})
    assert approve.returncode == 0, approve.stderr
    # The model now answers in other words (the oracles still pass): the answer drifted.
    model.answer = "It is sunny in Paris today, 21 C."
    result = run(project, f"--tracereplay-upstream={model.url}", "--tracereplay-mode=all")
    pending = list((project.path / "baselines").rglob("*.new"))
    assert pending, result.stdout.str()
    accept = subprocess.run([tracereplay.binary(), "baseline", "accept"], cwd=project.path,
                            capture_output=True, text=True, env={**os.environ, "CI": ""})
    assert accept.returncode == 0, accept.stderr
    assert not list((project.path / "baselines").rglob("*.new"))


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_and_streams_record_and_replay(project, model, stream):
    write_test(project, f'''
@pytest.mark.tracereplay(scenario="weather", case="claude")
def test_claude(tracereplay):
    assert "sunny" in anthropic_agent(stream={stream})

@pytest.mark.tracereplay(scenario="weather", case="gpt")
def test_gpt(tracereplay):
    assert "sunny" in openai_agent(stream={stream})
''')
    run(project, f"--tracereplay-upstream={model.url}").assert_outcomes(passed=2)
    assert recording(project, "claude").is_file() and recording(project, "gpt").is_file()
    model.shutdown()
    run(project, f"--tracereplay-upstream={model.url}", ci=True).assert_outcomes(passed=2)


def test_a_server_that_dies_mid_session_is_a_test_error_not_a_hang(project, model):
    write_test(project, '''
import os, signal

@pytest.mark.tracereplay(scenario="weather", case="first")
def test_first(tracereplay):
    # The recording server dies under the test.
    os.kill(tracereplay.server.proc.pid, signal.SIGKILL)
    tracereplay.server.proc.wait(timeout=10)

@pytest.mark.tracereplay(scenario="weather", case="second")
def test_second(tracereplay):
    openai_agent()
''')
    result = run(project, f"--tracereplay-upstream={model.url}")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*the tracereplay record server stopped during the session*"])


def test_xdist_workers_each_record_and_replay_their_tests(project, model):
    write_test(project, "".join(f'''
@pytest.mark.tracereplay(scenario="weather", case="case-{n}")
def test_{n}(tracereplay):
    assert "sunny" in openai_agent()
''' for n in range(4)))
    run(project, "-n", "2", f"--tracereplay-upstream={model.url}").assert_outcomes(passed=4)
    assert all(recording(project, f"case-{n}").is_file() for n in range(4))
    model.shutdown()
    run(project, "-n", "2", f"--tracereplay-upstream={model.url}", ci=True).assert_outcomes(passed=4)



def test_trials_record_k_runs_and_judge_them_as_one_set(project, model):
    policy = {**SCENARIO, "trials": {"min": 3, "pass": {"at-least": 2}}}
    scenario = project.path / "traces" / "weather" / "weather.scenario.json"
    scenario.write_text(json.dumps(policy))
    model.answers = ["It is sunny.", "It is raining.", "It is sunny again."]
    write_test(project, '''
@pytest.mark.tracereplay(scenario="weather")
def test_paris(tracereplay):
    openai_agent()
''')
    first = run(project, f"--tracereplay-upstream={model.url}", "--tracereplay-trials=3")
    first.assert_outcomes(passed=3)
    sets = project.path / "traces" / "weather" / "test_paris"
    assert sorted(p.name for p in sets.iterdir()) == [f"{k}.trace.ndjson.zst" for k in (1, 2, 3)]
    # Replayed under CI, without the model: the same set, 2 of 3 passing, passes its policy.
    model.shutdown()
    run(project, "--tracereplay-trials=3", ci=True).assert_outcomes(passed=3)
    # Under `all`, the trial completing the set fails with the set's verdict.
    scenario.write_text(json.dumps({**SCENARIO, "trials": {"min": 3, "pass": "all"}}))
    strict = run(project, "--tracereplay-trials=3", ci=True)
    strict.assert_outcomes(passed=2, failed=1)
    strict.stdout.fnmatch_lines([
        "*test_paris?trial3?*",
        "*tracereplay: weather/test_paris fail: 2 of 3 trials pass*",
        "*flaky 1:final-answer-contains: passed 2 of 3 trials*",
        "*tracereplay: weather/test_paris trial 2 fail*",
        "*fail final-answer-contains: final answer lacks `sunny`*",
    ])
    # Under xdist the trials run on two workers: the one completing the set judges it.
    spread = run(project, "--tracereplay-trials=3", "-n", "2", ci=True)
    spread.assert_outcomes(passed=2, failed=1)
    spread.stdout.fnmatch_lines(["*tracereplay: weather/test_paris fail: 2 of 3 trials pass*"])
    # A set that not all its trials reached is not judged, and says so.
    part = run(project, "--tracereplay-trials=3", "-k", "trial1", ci=True)
    part.assert_outcomes(passed=1, deselected=2)
    part.stdout.fnmatch_lines(["*tracereplay: weather/test_paris: 1 of 3 trials written, so the trial set was not judged*"])


def test_a_sequential_policy_records_trials_until_the_set_is_settled(project, model):
    policy = {**SCENARIO, "trials": {"max": 4, "pass": {"at-least": 2}, "sequential": True}}
    scenario = project.path / "traces" / "weather" / "weather.scenario.json"
    scenario.write_text(json.dumps(policy))
    model.answers = ["It is sunny."] * 4
    write_test(project, '''
@pytest.mark.tracereplay(scenario="weather")
def test_paris(tracereplay):
    openai_agent()
''')
    # Two passing trials of up to four settle it: trials 3 and 4 are never recorded.
    first = run(project, f"--tracereplay-upstream={model.url}", "--tracereplay-trials=4", "-rs")
    first.assert_outcomes(passed=2, skipped=2)
    first.stdout.fnmatch_lines(["*weather/test_paris is settled (pass after 2 trial(s), up to 4): trial 3 is not needed*"])
    sets = project.path / "traces" / "weather" / "test_paris"
    assert sorted(p.name for p in sets.iterdir()) == ["1.trace.ndjson.zst", "2.trace.ndjson.zst"]
    assert model.requests == 4
    # Under CI, without the model, the two recordings replay and the rest need none.
    model.shutdown()
    run(project, "--tracereplay-trials=4", ci=True).assert_outcomes(passed=2, skipped=2)
    # Settled failing at the first failure: the skipped trial completing the set fails with the
    # set's verdict.
    scenario.write_text(json.dumps({**SCENARIO, "trials": {"max": 4, "pass": "all", "sequential": True},
                                    "oracles": [{"type": "final-answer-contains", "value": "raining"}]}))
    failing = run(project, "--tracereplay-trials=4", ci=True)
    failing.assert_outcomes(passed=1, skipped=2, failed=1)
    failing.stdout.fnmatch_lines(["*test_paris?trial4?*", "*tracereplay: weather/test_paris fail*"])


def test_a_drift_design_stops_recording_once_a_look_shows_a_regression(project, model):
    policy = {**SCENARIO, "trials": {"min": 4, "drift": {"looks": [4, 8], "spending": "pocock"}}}
    (project.path / "traces" / "weather" / "weather.scenario.json").write_text(json.dumps(policy))
    model.answers = ["It is sunny."] * 8
    write_test(project, '''
@pytest.mark.tracereplay(scenario="weather")
def test_paris(tracereplay):
    openai_agent()
''')
    run(project, f"--tracereplay-upstream={model.url}", "--tracereplay-trials=8").assert_outcomes(passed=8)
    approve = subprocess.run([tracereplay.binary(), "baseline", "approve"], cwd=project.path,
                             capture_output=True, text=True, env={**os.environ, "CI": ""})
    assert approve.returncode == 0, approve.stderr
    assert model.requests == 16
    # The agent regresses. Four failing trials against eight passing ones show it at the first
    # look (p = 0.002, within Pocock's boundary): trials 5 to 8 are never recorded, and the
    # trial completing the set fails with the set's drift.
    model.answers = ["It is raining."] * 8
    again = run(project, f"--tracereplay-upstream={model.url}", "--tracereplay-trials=8",
                "--tracereplay-mode=all", "-rs")
    again.assert_outcomes(passed=4, skipped=3, failed=1)
    again.stdout.fnmatch_lines([
        "*tracereplay: weather/test_paris fail: 0 of 4 trials pass*",
        "*drift regression: the trial verdict at look 1 of 2 (4 current trials)*",
        "*weather/test_paris is settled (a regression at look 1 after 4 trial(s)): trial 5 is not needed*",
    ])
    assert model.requests == 16 + 8
