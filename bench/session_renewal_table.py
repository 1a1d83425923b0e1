#!/usr/bin/env python3
"""bench/session_renewal.sh's tables, and its section of docs/benchmarks.md.

  session_renewal_table.py RUNS.jsonl TABLE.md --command CMD --repeat R [--smoke 0|1]
                           [--default-timeout RUNS.jsonl] [--load-start LOAD]
      Medians per (locks, mode) of redlock_session_renewal's JSON lines, as markdown (the
      measured block of the section "Sessions: renewal cost"). With --smoke 1 it fails unless,
      at every size, per-lock renewal sent at least 10x the session's commands per tick, every
      lock stayed valid and the servers were empty after the release.

  session_renewal_table.py --write-docs TABLE.md FILE...
      Puts TABLE.md between the section's markers in each FILE (docs/benchmarks.md and its
      template bench/benchmarks.md.in), or appends the section when a FILE has none.
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HEADING = "## Sessions: renewal cost"
BEGIN = "<!-- session_renewal.sh: measured block, begin -->"
END = "<!-- session_renewal.sh: measured block, end -->"
SMOKE_RATIO = 10
GOAL_RATIO = 50


def fmt(v, digits=3):
    """Three significant digits, thousands separated by a thin space as elsewhere on the page."""
    if v is None:
        return "–"
    if float(v).is_integer() and abs(v) < 1000:
        return str(int(v))
    if 0 < v < 1:
        return f"{v:.2g}"
    if v >= 999.5:  # 999.6 is "1 000" at three digits, with the separator
        return f"{v:,.0f}".replace(",", " ")
    return f"{v:.{max(0, digits - len(str(int(v))))}f}" if v else "0"


def span(pair):
    low, high = pair
    return fmt(low) if low == high else f"{fmt(low)}–{fmt(high)}"


def ratio(a, b):
    return a / b if b else None


def command_output(*args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "unknown"


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    redis = command_output("redis-server", "--version").split()
    version = next((w[2:] for w in redis if w.startswith("v=")), "unknown")
    return (f"{cpu}, {os.cpu_count()} vCPU shared with other jobs (noisy), "
            f"{platform.system()} {platform.release()}, Redis {version} in memory on loopback")


def medians(runs):
    groups = {}
    for r in runs:
        groups.setdefault((r["locks"], r["mode"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        m = {k: statistics.median(r[k] for r in rs)
             for k in ("commands_per_tick", "renewals_per_tick", "server_cpu_ms_per_tick",
                       "client_cpu_ms_per_tick", "redis_calls_per_tick", "script_usec_per_call",
                       "timeouts", "acquire_s", "release_s")}
        # The servers' CPU above what an idle tick costs, per node: how long the renewals kept
        # each Redis busy per tick, had it a core of its own.
        m["busy_ms_per_node"] = statistics.median(
            (r["server_cpu_ms_per_tick"] - r["server_cpu_idle_ms_per_tick"]) / r["nodes"]
            for r in rs)
        m["script_usec_max_node"] = max(r["script_usec_per_call_max_node"] for r in rs)
        m["ping_ms_max"] = max(r["ping_ms_max"] for r in rs)
        m["request_timeout_ms"] = rs[0]["request_timeout_ms"]
        m["released"] = (min(r["released"] for r in rs), max(r["released"] for r in rs))
        m["ok"] = all(r["all_valid"] and r["servers_empty"] for r in rs)
        m["runs"] = len(rs)
        out[key] = m
    return out


def table(runs, survival, command, repeat, load_start):
    m = medians(runs)
    sizes = sorted({k[0] for k in m})
    ticks, ttl, tick = runs[0]["ticks"], runs[0]["ttl_ms"], runs[0]["tick_ms"]
    load = os.getloadavg()[0]
    commit = command_output("git", "rev-parse", "--short", "HEAD")
    # The page being written (and its template) do not count.
    changed = command_output("git", "status", "--porcelain", "--", ".", ":!docs/benchmarks.md",
                             ":!bench/benchmarks.md.in")
    dirty = " plus the working tree" if changed else ""
    lines = [
        BEGIN,
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}; "
        f"Release build of commit {commit}{dirty}; 1-minute load average {load_start} at the start, "
        f"{load:.1f} at the end. "
        f"TTL {ttl} ms, a tick every {tick} ms, {ticks} ticks measured per run; "
        + (f"medians of {repeat} runs per row (modes in turn)." if repeat > 1 else "one run per row.")
        + " Reproduce:",
        "",
        "```sh",
        command,
        "```",
        "",
        "| Locks held | Client commands / tick: per-lock | session | per-lock ÷ session "
        "| Servers' CPU ms / tick: per-lock | session | per-lock ÷ session |",
        "|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for n in sizes:
        p, s = m.get((n, "per-lock")), m.get((n, "session"))
        if not p or not s:
            continue
        lines.append(
            f"| {fmt(n)} | {fmt(p['commands_per_tick'])} | {fmt(s['commands_per_tick'])} "
            f"| **{fmt(ratio(p['commands_per_tick'], s['commands_per_tick']))}×** "
            f"| {fmt(p['server_cpu_ms_per_tick'])} | {fmt(s['server_cpu_ms_per_tick'])} "
            f"| {fmt(ratio(p['server_cpu_ms_per_tick'], s['server_cpu_ms_per_tick']))}× |")
    lines += [
        "",
        "| Locks held | Mode | `request_timeout` | Renewals / tick | Redis calls / tick "
        "(scripts' inner calls included) | Servers' CPU above idle, ms per node per tick "
        "| Renewal script wall time per call, ms (mean; slowest node) | Longest wait of another "
        "client's PING, ms | Client CPU ms / tick | Request timeouts "
        "| Releases a majority confirmed in time (close_session's report, or each release's) "
        "| Every lock valid, servers empty after |",
        "|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for n in sizes:
        for mode in ("per-lock", "session"):
            r = m.get((n, mode))
            if not r:
                continue
            lines.append(
                f"| {fmt(n)} | {mode} | {r['request_timeout_ms']} ms "
                f"| {fmt(r['renewals_per_tick'])} | {fmt(r['redis_calls_per_tick'])} "
                f"| {fmt(r['busy_ms_per_node'])} "
                f"| {fmt(r['script_usec_per_call'] / 1000)}; "
                f"{fmt(r['script_usec_max_node'] / 1000)} "
                f"| {fmt(r['ping_ms_max'])} "
                f"| {fmt(r['client_cpu_ms_per_tick'])} | {fmt(r['timeouts'])} "
                f"| {span(r['released'])} "
                f"| {'yes' if r['ok'] else '**no**'} ({r['runs']} runs) |")
    if survival:
        lines += [
            "",
            "The same at the default `request_timeout` (50 ms), one run of 3 ticks per mode:",
            "",
            "| Locks held | Mode | Acquisitions refused | Renewals / tick in the window | Locks "
            "lost: before the window; in it; at the release | Request timeouts in the window "
            "| Longest PING wait, ms | Every lock valid |",
            "|--:|---|--:|--:|--:|--:|--:|---|",
        ]
        for r in survival:
            at_release = (r["locks_lost"] - r["locks_lost_before_window"]
                          - r["locks_lost_in_window"])
            lines.append(
                f"| {fmt(r['locks'])} | {r['mode']} | {fmt(r['acquire_failures'])} "
                f"| {fmt(r['renewals_per_tick'])} | {fmt(r['locks_lost_before_window'])}; "
                f"{fmt(r['locks_lost_in_window'])}; {fmt(at_release)} | {fmt(r['timeouts'])} "
                f"| {fmt(r['ping_ms_max'])} | {'yes' if r['all_valid'] else '**no**'} |")
    goal = None
    if (1000, "per-lock") in m and (1000, "session") in m:
        goal = ratio(m[(1000, "per-lock")]["commands_per_tick"],
                     m[(1000, "session")]["commands_per_tick"])
    if goal is not None:
        verdict = "met" if goal >= GOAL_RATIO else "**not met**"
        lines += ["", f"Goal (issue 28): at least {GOAL_RATIO}× fewer client commands per tick at "
                      f"1,000 locks with a session: **{fmt(goal)}×, {verdict}**."]
    lines.append(END)
    return "\n".join(lines) + "\n", m


def smoke_check(m):
    problems = []
    for n in sorted({k[0] for k in m}):
        p, s = m.get((n, "per-lock")), m.get((n, "session"))
        if not p or not s:
            problems.append(f"{n} locks: a mode did not report")
            continue
        r = ratio(p["commands_per_tick"], s["commands_per_tick"])
        if r is None or r < SMOKE_RATIO:
            problems.append(f"{n} locks: per-lock ÷ session commands per tick is {r}, "
                            f"not at least {SMOKE_RATIO}")
        if not (p["ok"] and s["ok"]):
            problems.append(f"{n} locks: a lock was lost, or keys were left after the release")
    return problems


def write_docs(block_file, files):
    with open(block_file, encoding="utf-8") as f:
        block = f.read()
    if block.count(BEGIN) != 1 or block.count(END) != 1:
        sys.exit(f"{block_file}: not a measured block")
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            tail = rest.split(END, 1)[1]
            text = head + block.rstrip("\n") + tail
        else:
            text = text.rstrip("\n") + "\n\n" + HEADING + "\n\n" + block
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def main(argv):
    if argv[:1] == ["--write-docs"]:
        write_docs(argv[1], argv[2:])
        return 0
    runs_file, out_file = argv[0], argv[1]
    opts = dict(zip(argv[2::2], argv[3::2]))
    with open(runs_file, encoding="utf-8") as f:
        runs = [json.loads(line) for line in f if line.strip()]
    if not runs:
        print("session_renewal: no run reported", file=sys.stderr)
        return 1
    survival = []
    if os.path.exists(opts.get("--default-timeout", "")):
        with open(opts["--default-timeout"], encoding="utf-8") as f:
            survival = [json.loads(line) for line in f if line.strip()]
    text, m = table(runs, survival, opts.get("--command", "bench/session_renewal.sh"),
                    int(opts.get("--repeat", "1")), f"{float(opts.get('--load-start', 'nan')):.1f}")
    with open(out_file, "w", encoding="utf-8") as f:
        f.write(text)
    if opts.get("--smoke") == "1":
        problems = smoke_check(m)
        for p in problems:
            print(f"session_renewal: smoke: {p}", file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
