#!/usr/bin/env python3
"""bench/election.sh's table, and its section of docs/benchmarks.md.

  election_table.py RUN.json TABLE.md --command CMD [--callgrind RUNS.jsonl] [--smoke 0|1]
                    [--load-start LOAD]
      redlock_election_bench's JSON line as markdown (the measured block of the section
      "Leader election: failover and overhead"). With --smoke 1 it fails unless every standby
      led in a higher term within TTL + 1 s of the kill and every overhead cycle succeeded.

  election_table.py --write-docs TABLE.md FILE...
      Puts TABLE.md between the section's markers in each FILE (docs/benchmarks.md and its
      template bench/benchmarks.md.in), or appends the section when a FILE has none.
"""
import json
import os
import sys
import time

# No bench/__pycache__: a bench writes nothing outside the build directory (bench/run_test.sh
# checks the source tree for new files while other tests, this one's smoke run among them, run).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from session_renewal_table import command_output, fmt, machine  # noqa: E402

HEADING = "## Leader election: failover and overhead"
BEGIN = "<!-- election.sh: measured block, begin -->"
END = "<!-- election.sh: measured block, end -->"
GOAL_RATIO = 1.1
SMOKE_SLACK_MS = 1000
KINDS = [("campaign", "`campaign` + `resign`"),
         ("by-hand", "`acquire` (fencing, auto_renew, fair) + `release`: the campaign's lock"),
         ("fenced", "`acquire` (fencing) + `release`"),
         ("plain", "`acquire` + `release`")]


def ms(v):
    return fmt(v) if v is not None else "–"


def table(run, callgrind, command, load_start):
    ttl = run["ttl_ms"]
    f, o = run.get("failover", {}), run.get("overhead", {})
    kinds = o.get("variants", {})
    load = os.getloadavg()[0]
    commit = command_output("git", "rev-parse", "--short", "HEAD")
    changed = command_output("git", "status", "--porcelain", "--", ".", ":!docs/benchmarks.md",
                             ":!bench/benchmarks.md.in")
    dirty = " plus the working tree" if changed else ""
    lines = [
        BEGIN,
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}; "
        f"Release build of commit {commit}{dirty}; 1-minute load average {load_start} at the "
        f"start, {load:.1f} at the end. {run['nodes']} nodes, TTL {ttl} ms (renewed every "
        f"{fmt(run['renew_fraction'] * ttl)} ms), `request_timeout` {run['request_timeout_ms']} "
        f"ms, `waiter_ttl` {run['waiter_ttl_ms']} ms. Reproduce:",
        "",
        "```sh",
        command,
        "```",
        "",
    ]
    plain_take = kinds.get("plain", {}).get("take_ms", {}).get("p50")
    campaign_take = kinds.get("campaign", {}).get("take_ms", {}).get("p50")
    if f.get("trials_done"):
        rtt = plain_take
        handoff = campaign_take - plain_take if campaign_take and plain_take else None
        bound = ttl + rtt + handoff if handoff is not None else None
        lines += [
            f"**Failover**, {f['trials_done']} trials (of {f['trials_asked']} asked): a leader "
            "process SIGKILLed at a random moment of its renewal cycle, a standby already waiting "
            "in line." + (" With this few trials p99 is the largest." if f["trials_done"] < 100
                          else ""),
            "",
            "| ms | p50 | p99 | min | max |",
            "|---|--:|--:|--:|--:|",
        ]
        for key, what in (("failover_ms", "**Kill → the standby leads** (its campaign returns)"),
                          ("kill_to_expiry_ms", "Kill → a majority of nodes let the dead "
                                                "leader's key expire (PTTL read after the kill)"),
                          ("after_expiry_ms", "That expiry → the standby leads")):
            s = f[key]
            lines.append(f"| {what} | {ms(s['p50'])} | {ms(s['p99'])} | {ms(s['min'])} "
                         f"| {ms(s['max'])} |")
        terms = all(t["standby_term"] > t["leader_term"] for t in f["trials"])
        attempts = sorted(t["standby_attempts"] for t in f["trials"])
        lines += ["", f"Every standby's term above the crashed leader's: "
                      f"{'yes' if terms else '**no**'}; the standby's attempts per trial "
                      f"(waiting included): {attempts[0]} to {attempts[-1]}."]
        if bound is not None:
            p50, p99 = f["failover_ms"]["p50"], f["failover_ms"]["p99"]
            verdict = ("met at p50 and p99" if p99 <= bound else
                       "met at p50, not at p99" if p50 <= bound else "not met")
            lines += ["", f"Goal (issue 28): failover within TTL + one round trip + the hand-off "
                          f"= {ttl} + {ms(rtt)} (a plain acquire, p50) + {ms(handoff)} (what an "
                          f"uncontended campaign takes beyond that acquire, p50: its fencing round, "
                          f"which also proclaims) = **{ms(bound)} ms: {verdict}** "
                          f"(p50 {ms(p50)}, p99 {ms(p99)}). The kill lands anywhere in the "
                          f"renewal cycle, so the dead leader's key lives on for "
                          f"{fmt(ttl * (1 - run['renew_fraction']))} to {ttl} ms; what the "
                          f"bound's last two terms stand for is the time from that expiry to the "
                          f"standby's lead: p50 {ms(f['after_expiry_ms']['p50'])}, p99 "
                          f"{ms(f['after_expiry_ms']['p99'])} ms against {ms(rtt + handoff)} ms."]
            over = sum(1 for t in f["trials"] if t["failover_ms"] > bound)
            lines[-1] += (f" Trials over the bound: {over} of {len(f['trials'])} "
                          f"({fmt(100 * over / len(f['trials']))} %).")
    if kinds:
        ir = {c["kind"]: c["ir_per_cycle"] for c in callgrind}
        lines += [
            "",
            f"**Overhead**, uncontended, {o['iterations']} cycles of each kind in turn "
            f"(ABCD DCBA, after {o['warmup']} each not counted); medians, ms. *Requests* are "
            "`client_stats::requests` per step (commands to the nodes, all five)"
            + ("; *instructions* the client's per cycle under callgrind (runs of 20 and 120 "
               "cycles, the difference ÷ 100)." if ir else "."),
            "",
            "| Cycle | Take | Give back | Cycle | Requests: take | give back "
            + ("| Instructions / cycle |" if ir else "|"),
            "|---|--:|--:|--:|--:|--:|" + ("--:|" if ir else ""),
        ]
        for key, what in KINDS:
            k = kinds.get(key)
            if not k:
                continue
            lines.append(
                f"| {what} | {ms(k['take_ms']['p50'])} | {ms(k['give_ms']['p50'])} "
                f"| {ms(k['cycle_ms']['p50'])} | {fmt(k['requests_take'])} "
                f"| {fmt(k['requests_give'])} |"
                + (f" {fmt(ir[key]) if key in ir else '–'} |" if ir else ""))
        r = o.get("ratios", {})
        if r:
            lines += ["", "| `campaign` ÷ | take | cycle |", "|---|--:|--:|"]
            for base, what in (("by-hand", "the campaign's lock by hand"),
                               ("fenced", "a fenced acquire"), ("plain", "a plain acquire")):
                x = r[f"campaign/{base}"]
                lines.append(f"| {what} | {fmt(x['take'])}× | {fmt(x['cycle'])}× |")
            if "leader_read_ms" in o:
                lines += ["", f"`leader()` reads: p50 {ms(o['leader_read_ms']['p50'])} ms, "
                              f"{fmt(o['leader_read_requests'])} requests each."]
            take = r["campaign/fenced"]["take"]
            verdict = "met" if take <= GOAL_RATIO else "not met"
            lines += ["", f"Goal (issue 28): an uncontended campaign at most {GOAL_RATIO}× an "
                          f"acquire (with fencing): **{fmt(take)}×, {verdict}** (campaign + "
                          f"resign ÷ acquire + release: {fmt(r['campaign/fenced']['cycle'])}×); "
                          f"against the same lock taken by hand (fencing, `auto_renew`, fair "
                          f"waiting): {fmt(r['campaign/by-hand']['take'])}×."]
    lines.append(END)
    return "\n".join(lines) + "\n"


def smoke_check(run):
    problems = []
    f = run.get("failover", {})
    if not f.get("ok"):
        problems.append(f"failover: {f.get('error', 'no result')}")
    for i, t in enumerate(f.get("trials", [])):
        if t["standby_term"] <= t["leader_term"]:
            problems.append(f"trial {i}: term {t['standby_term']} not above {t['leader_term']}")
        if t["failover_ms"] > run["ttl_ms"] + SMOKE_SLACK_MS:
            problems.append(f"trial {i}: the standby led {t['failover_ms']} ms after the kill, "
                            f"over TTL + {SMOKE_SLACK_MS} ms")
    if not run.get("overhead", {}).get("ok"):
        problems.append("overhead: a cycle failed")
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
    run_file, out_file = argv[0], argv[1]
    opts = dict(zip(argv[2::2], argv[3::2]))
    try:
        with open(run_file, encoding="utf-8") as f:
            run = json.loads(f.readline())
    except (OSError, ValueError):
        print("election: the run reported nothing", file=sys.stderr)
        return 1
    callgrind = []
    if os.path.exists(opts.get("--callgrind", "")):
        with open(opts["--callgrind"], encoding="utf-8") as f:
            callgrind = [json.loads(line) for line in f if line.strip()]
    text = table(run, callgrind, opts.get("--command", "bench/election.sh"),
                 f"{float(opts.get('--load-start', 'nan')):.1f}")
    with open(out_file, "w", encoding="utf-8") as f:
        f.write(text)
    if opts.get("--smoke") == "1":
        problems = smoke_check(run)
        for p in problems:
            print(f"election: smoke: {p}", file=sys.stderr)
        return 1 if problems else 0
    return 0 if run.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
