#!/usr/bin/env python3
"""The tables of docs/benchmarks.md, "Scale-out over cluster members", from the
results directory bench/cluster_scaleout.sh wrote (its JSON, shards.txt,
callgrind.txt, meta.json). Prints Markdown on stdout.

Usage: cluster_scaleout_report.py RESULTS_DIR
"""
import json
import pathlib
import statistics
import sys

CONFIGS = ["standalone", "cluster1", "cluster2", "cluster3"]
SHARDS = {"standalone": 1, "cluster1": 1, "cluster2": 2, "cluster3": 3}
LABEL = {
    "standalone": "3 standalone masters",
    "cluster1": "3 clusters × 1 shard",
    "cluster2": "3 clusters × 2 shards",
    "cluster3": "3 clusters × 3 shards",
}


def crc16(data: bytes) -> int:
    """CRC16-XMODEM, Redis Cluster's key hash."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def predicted_shares(resources: int, shards: int) -> list:
    """Each shard's share of the resources, from their slots ("redlock:{bench-lib-N}")."""
    counts = [0] * shards
    for r in range(resources):
        slot = crc16(f"bench-lib-{r}".encode()) % 16384
        for k in range(shards):
            if k * 16384 // shards <= slot < (k + 1) * 16384 // shards:
                counts[k] += 1
    return [c / resources for c in counts]


def fmt(x: float, digits: int = 3) -> str:
    """Three significant figures, thousands spaced."""
    if x >= 1000:
        return f"{x:,.0f}".replace(",", " ")
    return f"{x:.{max(0, digits - len(str(int(abs(x)))))}f}" if x else "0"


def main() -> int:
    d = pathlib.Path(sys.argv[1])
    meta = json.loads((d / "meta.json").read_text())
    reps = meta["reps"]
    runs = {}
    for cfg in CONFIGS:
        for c in (1, 64, 64 * SHARDS[cfg]):
            runs[cfg, c] = [json.loads((d / f"{cfg}-c{c}-r{r}.json").read_text())
                            for r in range(1, reps + 1)]

    out = []
    out.append(f"Measured {meta['date']} on {meta['cores']} cores (load average after: "
               f"{meta['load_average']}), Redis {meta['redis']}, commit {meta['commit']}; "
               f"{reps} repetitions of {meta['secs']} s per row, {meta['resources']} resources; "
               f"the script took {meta['seconds']} s.")
    out.append("")

    # ---- throughput ---------------------------------------------------------------------------
    out.append("| Members | In flight | Library locks/s (median) | per repetition | ÷ standalone "
               "(median of the repetitions' ratios) | Raw locks/s | p50 ms | Client CPU µs/lock | "
               "Allocations/lock | Servers' CPU µs/lock (all nodes) | Failed |")
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    ratios = {}
    for c in (1, 64):
        for cfg in CONFIGS:
            rs = runs[cfg, c]
            lib = [r["results"]["lib"] for r in rs]
            ops = [x["ops_per_s"] for x in lib]
            base = [r["results"]["lib"]["ops_per_s"] for r in runs["standalone", c]]
            ratio = statistics.median(a / b for a, b in zip(ops, base))
            ratios[cfg, c] = ratio
            raw = ("—" if cfg != "standalone" else
                   fmt(statistics.median(r["results"]["raw"]["ops_per_s"] for r in rs)))
            out.append(
                f"| {LABEL[cfg]} | {c} | {fmt(statistics.median(ops))} | "
                f"{', '.join(fmt(x) for x in ops)} | {ratio:.2f} | {raw} | "
                f"{statistics.median(x['latency_ns']['p50'] for x in lib) / 1e6:.3f} | "
                f"{fmt(statistics.median(x['client_cpu_us_per_lock'] for x in lib))} | "
                f"{fmt(statistics.median(x['allocs_per_lock'] for x in lib))} | "
                f"{fmt(statistics.median(x['server_cpu_us_per_lock'] for x in lib))} | "
                f"{sum(x['failed'] for x in lib)} |")
    out.append("")

    # ---- commands per shard -------------------------------------------------------------------
    shards_of = {}
    for line in (d / "shards.txt").read_text().splitlines():
        s, *ports = line.split()
        shards_of[f"cluster{s}"] = ports
    out.append("| Members | Goal per shard | Commands per shard, each member (all runs) | "
               "Predicted from the resources' slots | Worst shard vs 1/S | Met |")
    out.append("|---|--:|---|---|--:|---|")
    verdict_share = True
    for cfg in CONFIGS[1:]:
        s = SHARDS[cfg]
        ports = shards_of[cfg]
        commands = {p: 0 for p in ports}
        for c in (1, 64):
            for r in runs[cfg, c]:
                for n in r["results"]["lib"]["per_node"]:
                    commands[n["node"].rsplit(":", 1)[1]] += n["commands"]
        members = []
        worst = 0.0
        for m in range(3):
            mine = [commands[p] for p in ports[m * s:(m + 1) * s]]
            total = sum(mine) or 1
            shares = [x / total for x in mine]
            worst = max([worst] + [abs(x - 1 / s) * s for x in shares])
            members.append(" / ".join(f"{x:.1%}" for x in shares) + f" of {fmt(total)}")
        predicted = " / ".join(f"{x:.1%}" for x in predicted_shares(meta["resources"], s))
        met = worst <= 0.10
        verdict_share = verdict_share and met
        out.append(f"| {LABEL[cfg]} | {1 / s:.1%} ± 10 % | {'; '.join(members)} | {predicted} | "
                   f"{worst:+.1%} | {'met' if met else 'not met'} |")
    out.append("")

    # ---- server CPU per lock per shard --------------------------------------------------------
    out.append("| Members | In flight | CPU µs/lock of each shard (median of the repetitions, "
               "mean of the 3 members) | One member, all its shards | All 3 members |")
    out.append("|---|--:|---|--:|--:|")
    per_shard_cpu = {}
    for c in (1, 64, 128, 192):
        for cfg in CONFIGS:
            s = SHARDS[cfg]
            if (cfg, c) not in runs:
                continue
            per_rep = []
            for r in runs[cfg, c]:
                nodes = r["results"]["lib"]["per_node"]
                per_rep.append([statistics.mean(nodes[m * s + k]["cpu_us_per_lock"]
                                                for m in range(3)) for k in range(s)])
            shard = [statistics.median(x[k] for x in per_rep) for k in range(s)]
            per_shard_cpu[cfg, c] = shard
            out.append(f"| {LABEL[cfg]} | {c} | {' / '.join(fmt(x) for x in shard)} | "
                       f"{fmt(sum(shard))} | {fmt(3 * sum(shard))} |")
    out.append("")

    # ---- instructions per lock ----------------------------------------------------------------
    pairs = {}
    for line in (d / "callgrind.txt").read_text().splitlines():
        cfg, n, pair, total = line.split()
        pairs.setdefault((cfg, pair), {})[int(n)] = int(total)
    small, big = meta["cg_small"], meta["cg_big"]
    out.append(f"| Members | Instructions per lock, median of {meta['cg_pairs']} pairs | "
               "each pair | ÷ standalone (medians) | Goal | Met |")
    out.append("|---|--:|---|--:|--:|---|")
    per_lock = {}
    for cfg in ("standalone", "cluster1", "cluster3"):
        each = [(v[big] - v[small]) / (big - small)
                for (c, _), v in sorted(pairs.items()) if c == cfg]
        per_lock[cfg] = (statistics.median(each), each)
    verdict_ir = True
    for cfg in ("standalone", "cluster1", "cluster3"):
        median, each = per_lock[cfg]
        x = median / per_lock["standalone"][0]
        goal = "" if cfg == "standalone" else "≤ 1.10"
        met = "" if cfg == "standalone" else ("met" if x <= 1.10 else "not met")
        if cfg != "standalone":
            verdict_ir = verdict_ir and x <= 1.10
        out.append(f"| {LABEL[cfg]} | {fmt(median)} | {', '.join(fmt(e) for e in each)} | "
                   f"{x:.3f} | {goal} | {met} |")
    out.append("")

    # ---- goals --------------------------------------------------------------------------------
    out.append("| Goal | Measured | Verdict |")
    out.append("|---|---|---|")
    out.append(f"| each shard serves 1/S ± 10 % of a member's commands | worst shard within "
               f"the bound for S = 1, 2, 3 | {'met' if verdict_share else 'not met'} |")
    out.append(f"| client instructions per lock ≤ 1.10 × standalone | 1 shard "
               f"{per_lock['cluster1'][0] / per_lock['standalone'][0]:.3f}, 3 shards "
               f"{per_lock['cluster3'][0] / per_lock['standalone'][0]:.3f} | "
               f"{'met' if verdict_ir else 'not met'} |")
    worst_tp = min(ratios["cluster1", 1], ratios["cluster1", 64])
    out.append(f"| uncontended throughput, 1-shard members ≥ 0.9 × standalone | "
               f"{ratios['cluster1', 1]:.2f} at 1 in flight, {ratios['cluster1', 64]:.2f} at 64 | "
               f"{'met' if worst_tp >= 0.9 else 'not met'} |")
    out.append("")

    routed = dict(line.split() for line in (d / "callgrind-routed.txt").read_text().splitlines())
    out.append("Of which the member's routing layer itself (self instructions of routed_member, "
               "cluster_router, cluster_routing and the redirection reader, first pair): "
               + ", ".join(f"{LABEL[c]} {fmt(float(routed[c]))}" for c in ("cluster1", "cluster3"))
               + ".")
    out.append("")

    # ---- projection ---------------------------------------------------------------------------
    out.append("Projection for dedicated hosts (each shard a core of its own), from the runs where "
               "each shard sees about 64 locks in flight (64 × S in all):")
    out.append("")
    out.append("| Members | In flight | Busiest shard µs/lock | Server bound: locks/s | "
               "÷ standalone | Client µs/lock (one loop thread) | Client bound: locks/s | "
               "Projected locks/s, one client |")
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|")
    server_base = None
    for cfg in CONFIGS:
        c = 64 * SHARDS[cfg]
        busiest = max(per_shard_cpu[cfg, c])
        server = 1e6 / busiest
        server_base = server_base or server
        client = statistics.median(r["results"]["lib"]["client_cpu_us_per_lock"]
                                   for r in runs[cfg, c])
        out.append(f"| {LABEL[cfg]} | {c} | {fmt(busiest)} | {fmt(server)} | "
                   f"{server / server_base:.2f} | {fmt(client)} | {fmt(1e6 / client)} | "
                   f"{fmt(min(server, 1e6 / client))} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
