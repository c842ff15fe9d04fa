#!/usr/bin/env python3
"""Peak memory and wall time of `ingest` of one large OTLP/JSON export.

    cargo build --release
    python3 benches/ingest_otlp.py [TRACES] [TRACEREPLAY]

Writes an export of TRACES traces (default 250,000: one million spans — an agent span, two chat
spans and a tool span each, every trace's root last, as SDKs export them) to a temporary
directory, runs `tracereplay ingest --unkeyed -q --from otlp-json` on it under `/usr/bin/time -v`
(TRACEREPLAY: default target/release/tracereplay), and prints the export's size, the traces
written, the wall time and the peak resident set size.
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parent.parent
n = int(sys.argv[1]) if len(sys.argv) > 1 else 250_000
exe = sys.argv[2] if len(sys.argv) > 2 else str(root / "target/release/tracereplay")


def kv(k, v):
    return {"key": k, "value": {"stringValue": v}}


def spans(t):
    tid = format(t, "032x")

    def span(i, parent, name, attrs):
        s = {"traceId": tid, "spanId": format(t * 16 + i, "016x"), "name": name,
             "startTimeUnixNano": str(1_700_000_000_000_000_000 + t * 1_000_000 + i),
             "endTimeUnixNano": str(1_700_000_000_000_000_000 + t * 1_000_000 + i + 10),
             "attributes": attrs}
        if parent is not None:
            s["parentSpanId"] = format(t * 16 + parent, "016x")
        return s

    return [
        span(2, 1, "chat", [kv("gen_ai.operation.name", "chat"),
             kv("gen_ai.input.messages", '[{"role":"user","parts":[{"type":"text","content":"Where is my order?"}]}]'),
             kv("gen_ai.output.messages", '[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"lookup_order","arguments":{"order_id":"A-1"}}]}]')]),
        span(3, 1, "execute_tool lookup_order", [kv("gen_ai.operation.name", "execute_tool"),
             kv("gen_ai.tool.name", "lookup_order"), kv("gen_ai.tool.call.id", "c1"),
             kv("gen_ai.tool.call.result", '{"status":"shipped"}')]),
        span(4, 1, "chat", [kv("gen_ai.operation.name", "chat"),
             kv("gen_ai.output.messages", '[{"role":"assistant","parts":[{"type":"text","content":"It shipped."}]}]')]),
        span(1, None, "invoke_agent support", [kv("gen_ai.operation.name", "invoke_agent"),
             kv("gen_ai.agent.name", "support")]),
    ]


with tempfile.TemporaryDirectory() as d:
    export = pathlib.Path(d) / "export.otlp.json"
    with open(export, "w") as out:
        out.write('{"resourceSpans":[{"scopeSpans":[{"spans":[')
        for t in range(n):
            text = ",".join(json.dumps(s, separators=(",", ":")) for s in spans(t))
            out.write(("," if t else "") + text)
        out.write("]}]}]}")
    run = subprocess.run(
        ["/usr/bin/time", "-v", exe, "ingest", "--unkeyed", "-q", "--from", "otlp-json",
         "-o", str(pathlib.Path(d) / "out"), str(export)],
        capture_output=True, text=True, env={"CI": "true", "PATH": "/usr/bin:/bin"})
    if run.returncode != 0:
        sys.exit(run.stderr)
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", run.stderr).group(1)
    print(f"export: {export.stat().st_size / 1e6:.0f} MB, {4 * n} spans")
    print(run.stdout.strip().splitlines()[-1])
    print(f"wall {wall}, peak RSS {peak / 1024:.0f} MB")
