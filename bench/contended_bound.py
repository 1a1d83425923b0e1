"""bench/contended.sh --bound: each pair's raw round trip, the bound 1 / (1 ms + it), the
16 workers' grants/s and their ratio, then the medians (issue 28, item 4).

    python3 bench/contended_bound.py RESULTS_DIR COMMAND...
"""
import json
import statistics
import sys

results, commands = sys.argv[1], sys.argv[2:]


def load(label):
    with open(f"{results}/{label}.json") as f:
        return json.load(f)


rows = []
pair = 1
while True:
    try:
        raw, lib = load(f"raw-{pair}"), load(f"lib-{pair}")
    except FileNotFoundError:
        break
    r, c = raw["results"]["raw"], lib["results"]["lib"]
    rtt = r["acquire_latency_ns"]["p50"] / 1e6  # ms
    hold = lib["hold_ms"]
    held = c["held_ns"]["p50"] / 1e6
    bound = 1000 / (hold + rtt)
    rows.append({
        "rtt": rtt, "bound": bound, "grants": c["ops_per_s"], "ratio": c["ops_per_s"] / bound,
        "held": held, "ratio_held": c["ops_per_s"] * (held + rtt) / 1000,
        "handoff": c["handoff_ns"]["p50"] / 1e6, "requests": c["client_requests_per_lock"],
        "failed": c["failed"], "load": (lib["load_average_before"], lib["load_average_after"]),
    })
    pair += 1
if not rows:
    sys.exit(f"contended_bound: no pairs in {results}")

print("| pair | raw acquire p50 (ms) | bound 1/(1 ms + RTT) /s | grants/s | ratio"
      " | lock held p50 (ms) | ratio to 1/(held + RTT) | hand-off p50 (ms) | requests/grant |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for i, x in enumerate(rows, 1):
    print(f'| {i} | {x["rtt"]:.3f} | {x["bound"]:.0f} | {x["grants"]:.0f} | {x["ratio"]:.3f}'
          f' | {x["held"]:.3f} | {x["ratio_held"]:.3f} | {x["handoff"]:.3f} | {x["requests"]:.2f} |')
med = {k: statistics.median(x[k] for x in rows)
       for k in ("rtt", "bound", "grants", "ratio", "held", "ratio_held", "handoff")}
print(f'| **median** | {med["rtt"]:.3f} | {med["bound"]:.0f} | {med["grants"]:.0f}'
      f' | **{med["ratio"]:.3f}** | {med["held"]:.3f} | {med["ratio_held"]:.3f}'
      f' | {med["handoff"]:.3f} | |')
print()
failed = sum(x["failed"] for x in rows)
loads = [v for x in rows for v in x["load"]]
print(f"Goal (issue 28): grants/s at least 0.92 of the bound: median {med['ratio']:.3f}, "
      f"{'met' if med['ratio'] >= 0.92 else 'not met'}. Failed acquisitions: {failed}. "
      f"1-minute load average {min(loads):.1f} to {max(loads):.1f}.")
print()
print("```sh")
for cmd in commands:
    print(cmd)
print("```")
print(f"\nJSON: {results}/")
