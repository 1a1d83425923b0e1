#!/usr/bin/env python3
"""One human-readable line for a phase of bench/run.sh, from the JSON it wrote.

Usage: run_summary.py RESULTS_DIR LABEL. LABEL is a redlock_load run (RESULTS_DIR/LABEL.json),
`callgrind` (callgrind.json) or `micro` (micro.json). The JSON stays in its file; the console
gets this line.
"""
import json
import pathlib
import sys


def count(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def ms(ns):
    return f"{ns / 1e6:.3g} ms"


def ratio(a, b):
    return f"{a / b:.2f}" if b else "–"


def failed(results):
    n = sum(r.get("failed", 0) for r in results.values())
    return f"; {n:,} cycles failed" if n else ""


def load_run(run):
    res = run["results"]
    lib = res.get("lib")
    if "kinds" in (lib or {}):
        kinds = lib["kinds"]
        roles = ", ".join(f"{name} {count(r['grants_per_s'])} grants/s (wait p50 "
                          f"{ms(r['wait_ns']['p50'])})" for name, r in kinds["roles"].items())
        extra = ""
        if "permit_utilisation_working" in kinds:
            extra = f", permits {kinds['permit_utilisation_working']:.0%} used"
        return f"{run['concurrency']} workers: {roles}{extra}{failed(res)}"
    if run["workload"] == "contended":
        return (f"{run['concurrency']} workers: lib {count(lib['ops_per_s'])} grants/s, wait p50 "
                f"{ms(lib['acquire_latency_ns']['p50'])}, p99 "
                f"{ms(lib['acquire_latency_ns']['p99'])}{failed(res)}")
    if "lib" in res and "raw" in res:
        raw = res["raw"]
        line = (f"lib {count(lib['ops_per_s'])} ops/s, raw {count(raw['ops_per_s'])}: lib/raw "
                f"{ratio(lib['ops_per_s'], raw['ops_per_s'])}; p50 {ms(lib['latency_ns']['p50'])}"
                f" (raw {ms(raw['latency_ns']['p50'])}), p99 {ms(lib['latency_ns']['p99'])} "
                f"(raw {ms(raw['latency_ns']['p99'])})")
        if "raw-hiredis" in res:
            line += f"; hiredis async API {count(res['raw-hiredis']['ops_per_s'])} ops/s"
        return line + failed(res)
    if "lib-shared" in res:
        shared = ", ".join(f"{name.replace('lib-', '')} {count(r['ops_per_s'])} "
                           f"({ratio(r['ops_per_s'], lib['ops_per_s'])})"
                           for name, r in res.items() if name != "lib")
        return f"exclusive {count(lib['ops_per_s'])} ops/s; {shared}{failed(res)}"
    (mode, r), = res.items()
    line = f"{mode} {count(r['ops_per_s'])} ops/s, RSS {count(r['rss_bytes_per_in_flight'])} B"
    if "heap_bytes_per_in_flight" in r:
        line += f", heap {count(r['heap_bytes_per_in_flight'])} B"
    return line + f" per lock in flight{failed(res)}"


def callgrind(cg):
    lib, raw = cg["lib"]["per_cycle"], cg["raw"]["per_cycle"]
    line = (f"lib {lib:,} instructions per lock cycle, raw {raw:,}: lib/raw {ratio(lib, raw)} "
            f"(cycles {cg['big'] - cg['small']:,})")
    if "raw_resp" in cg:
        line += f"; raw with the library's encoder {cg['raw_resp']['per_cycle']:,}"
    return line


def main():
    results, label = pathlib.Path(sys.argv[1]), sys.argv[2]
    if label == "micro":
        micro = json.loads((results / "micro.json").read_text().replace("-nan", "null")
                           .replace("nan", "null").replace("inf", "null"))
        names = {b["run_name"] for b in micro["benchmarks"]}
        print(f"{len(names)} micro benchmarks")
    elif label == "callgrind":
        print(callgrind(json.loads((results / "callgrind.json").read_text())))
    else:
        print(load_run(json.loads((results / f"{label}.json").read_text())))


if __name__ == "__main__":
    main()
