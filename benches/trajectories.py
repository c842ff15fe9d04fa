#!/usr/bin/env python3
"""Writes the `tool-sequence` common-case corpus of docs/performance.md: N ten-call trajectories
(tau-bench's shape: arguments of ids and lists) over 20 scenarios, each judged by a `superset`
`tool-sequence` of 8 expected calls with `argsMatch: exact`. `mixed` changes one argument in
every third trajectory (so it fails), `pass` changes none, `called` judges the same traces by
one `tool-called` instead (what the rest of the pipeline costs). The traces are written as plain
NDJSON; seal them with `tracereplay pack`:

    python3 benches/trajectories.py DIR 20000 mixed
    find DIR -name '*.trace.ndjson' | xargs -n 2000 tracereplay pack && find DIR -name '*.trace.ndjson' -delete

The same arguments always write the same bytes.
"""
import json
import os
import sys

TOOLS = ["get_order_details", "get_user_details", "exchange_delivered_order_items"]


def args(k: int) -> dict:
    return {
        "order_id": f"#W{k}",
        "item_ids": [str(1_000_000 + k), "2000000"],
        "payment_method_id": "credit_card_7",
    }


def main() -> None:
    out, n, shape = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if shape not in ("mixed", "pass", "called"):
        sys.exit("the shape is mixed, pass or called")
    per = n // 20
    for s in range(20):
        sid = f"seq.s{s:02d}"
        d = os.path.join(out, sid)
        os.makedirs(d, exist_ok=True)
        if shape == "called":
            oracles = [{"type": "tool-called", "tool": "get_user_details"}]
        else:
            calls = [{"tool": TOOLS[k % 3], "args": args(k)} for k in range(8)]
            oracles = [{"type": "tool-sequence", "mode": "superset", "argsMatch": "exact", "calls": calls}]
        scenario = {"id": sid, "title": "t", "risk": "high", "oracles": oracles}
        with open(os.path.join(d, f"{sid}.scenario.json"), "w") as f:
            json.dump(scenario, f)
        for c in range(per):
            i = s * per + c
            header = {"kind": "header", "format": "tracereplay.trace", "version": 1, "scenario": sid, "case": f"run-{i:06d}"}
            lines = [json.dumps(header)]
            for k in range(10):
                a = args(k)
                if shape == "mixed" and i % 3 == 0 and k == 3:
                    a["order_id"] = "#W0"
                lines.append(json.dumps({"kind": "tool_call", "seq": k + 1, "call_id": f"c{k}", "tool": TOOLS[k % 3], "args": a}))
            lines.append(json.dumps({"kind": "run_end", "seq": 11, "status": "completed"}))
            with open(os.path.join(d, f"run-{i:06d}.trace.ndjson"), "w") as f:
                f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
