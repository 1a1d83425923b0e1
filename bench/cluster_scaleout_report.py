#!/usr/bin/env python3
"""The tables of docs/benchmarks.md, "Scale-out over cluster members", from the
results directory bench/cluster_scaleout.sh wrote (the redlock_load JSON,
shards.txt, callgrind.txt, callgrind-routed.txt, meta.json). Markdown on stdout.

Usage: cluster_scaleout_report.py RESULTS_DIR
"""
import json
import pathlib
import statistics
import sys

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
        counts[slot * shards // 16384] += 1
    return [c / resources for c in counts]


def fmt(x: float) -> str:
    """Three significant figures, thousands spaced."""
    if x >= 1000:
        return f"{x:,.0f}".replace(",", " ")
    if x == 0:
        return "0"
    return f"{x:.{max(0, 3 - len(str(int(abs(x)))))}f}"


class Results:
    def __init__(self, d: pathlib.Path):
        self.d = d
        self.meta = json.loads((d / "meta.json").read_text())
        self.ports = {"standalone": self.meta["standalone"].split()}
        for line in (d / "shards.txt").read_text().splitlines():
            s, *ports = line.split()
            self.ports[f"cluster{s}"] = ports

    def run(self, cfg: str, c: int) -> dict:
        return json.loads((self.d / f"{cfg}-c{c}.json").read_text())

    def mode(self, cfg: str, c: int) -> dict:
        """The measured configuration's own mode (the library on `cfg`)."""
        return self.run(cfg, c)["results"]["lib"]

    def nodes(self, cfg: str, c: int, mode: str = "lib", of: str = "") -> dict:
        """Per node (by port) of `of` (default `cfg`) in run `cfg` at `c`, during `mode`'s
        phases: commands and CPU µs per lock."""
        per = {n["node"].rsplit(":", 1)[1]: n
               for n in self.run(cfg, c)["results"][mode]["per_node"]}
        return {p: per[p] for p in self.ports[of or cfg]}

    def shard_cpu(self, cfg: str, c: int) -> list:
        """Each shard's CPU µs per lock, the mean over the 3 members."""
        s = SHARDS[cfg]
        nodes = self.nodes(cfg, c)
        ports = self.ports[cfg]
        return [statistics.mean(nodes[ports[m * s + k]]["cpu_us_per_lock"] for m in range(3))
                for k in range(s)]

    def servers_cpu(self, cfg: str, c: int, mode: str = "lib") -> float:
        """All the configuration's nodes, µs per lock (the other configuration's idle nodes out)."""
        return sum(n["cpu_us_per_lock"] for n in self.nodes(cfg, c, mode).values())


def main() -> int:
    res = Results(pathlib.Path(sys.argv[1]))
    meta = res.meta
    out = []
    out.append(f"Measured {meta['date']} on {meta['cores']} cores (1-minute load average "
               f"{meta['load_before']} before, {meta['load_after']} after), Redis "
               f"{meta['redis']}, commit {meta['commit']}; {meta['reps']} alternating repetitions "
               f"of {meta['secs']} s per configuration and depth, {meta['resources']} resources; "
               f"the script took {meta['seconds']} s.")
    out.append("")

    # ---- throughput ---------------------------------------------------------------------------
    out.append("| Members | In flight | Library locks/s (median) | Per repetition | "
               "Standalone in the same process | Per repetition ÷ standalone | Median ratio | "
               "p50 ms | Client CPU µs/lock | Servers' CPU µs/lock | Allocations/lock | Failed |")
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    ratio = {}
    for c in (1, 64):
        alone = res.run("standalone", c)["results"]
        lib = alone["lib"]
        out.append(f"| {LABEL['standalone']} (raw client: {fmt(alone['raw']['ops_per_s'])}) | {c} | "
                   f"{fmt(lib['ops_per_s'])} | {', '.join(fmt(x) for x in lib['ops_per_s_reps'])} | "
                   f"— | — | — | {lib['latency_ns']['p50'] / 1e6:.3f} | "
                   f"{fmt(lib['client_cpu_us_per_lock'])} | "
                   f"{fmt(res.servers_cpu('standalone', c))} | {fmt(lib['allocs_per_lock'])} | "
                   f"{lib['failed']} |")
        for cfg in ("cluster1", "cluster2", "cluster3"):
            run = res.run(cfg, c)
            lib, base = run["results"]["lib"], run["results"]["lib-baseline"]
            reps = run["lib_vs_baseline"]["ops_per_s_reps"]
            ratio[cfg, c] = statistics.median(reps)
            out.append(f"| {LABEL[cfg]} | {c} | {fmt(lib['ops_per_s'])} | "
                       f"{', '.join(fmt(x) for x in lib['ops_per_s_reps'])} | "
                       f"{fmt(base['ops_per_s'])} | {', '.join(f'{x:.2f}' for x in reps)} | "
                       f"**{ratio[cfg, c]:.2f}** | {lib['latency_ns']['p50'] / 1e6:.3f} | "
                       f"{fmt(lib['client_cpu_us_per_lock'])} | {fmt(res.servers_cpu(cfg, c))} | "
                       f"{fmt(lib['allocs_per_lock'])} | {lib['failed'] + base['failed']} |")
    out.append("")
    # Where client and servers share the 2 cores (CPU-bound at 64 in flight), what the
    # CPU per lock of all of them predicts, from the same process's phases.
    run = res.run("cluster1", 64)["results"]
    mine = run["lib"]["client_cpu_us_per_lock"] + res.servers_cpu("cluster1", 64)
    theirs = run["lib-baseline"]["client_cpu_us_per_lock"] + sum(
        n["cpu_us_per_lock"]
        for n in res.nodes("cluster1", 64, "lib-baseline", of="standalone").values())
    out.append(f"At 64 in flight client and servers share the 2 cores, so throughput follows the "
               f"CPU a lock costs all of them: {fmt(mine)} µs with 1-shard members against "
               f"{fmt(theirs)} µs with standalone ones in the same process, which predicts "
               f"{theirs / mine:.2f} × the throughput.")
    out.append("")

    # ---- commands per shard -------------------------------------------------------------------
    out.append("| Members | Goal per shard | Commands per shard, each member (all the lib runs) | "
               "Predicted from the resources' slots | Worst shard vs 1/S | Met |")
    out.append("|---|--:|---|---|--:|---|")
    verdict_share = True
    worst_all = 0.0
    for cfg in ("cluster1", "cluster2", "cluster3"):
        s = SHARDS[cfg]
        ports = res.ports[cfg]
        commands = {p: 0 for p in ports}
        for c in sorted({1, 64, 64 * s}):
            for p, n in res.nodes(cfg, c).items():
                commands[p] += n["commands"]
        members = []
        worst = 0.0
        for m in range(3):
            mine = [commands[p] for p in ports[m * s:(m + 1) * s]]
            total = sum(mine) or 1
            shares = [x / total for x in mine]
            worst = max([worst] + [abs(x - 1 / s) * s for x in shares])
            members.append(" / ".join(f"{x:.1%}" for x in shares) + f" of {fmt(total)}")
        worst_all = max(worst_all, worst)
        predicted = " / ".join(f"{x:.1%}" for x in predicted_shares(meta["resources"], s))
        met = worst <= 0.10
        verdict_share = verdict_share and met
        out.append(f"| {LABEL[cfg]} | {1 / s:.1%} ± 10 % | {'; '.join(members)} | {predicted} | "
                   f"{worst:+.1%} | {'met' if met else 'not met'} |")
    out.append("")

    # ---- server CPU per lock per shard --------------------------------------------------------
    out.append("| Members | In flight | CPU µs per lock of each shard (mean of the 3 members) | "
               "One member, all its shards | All 3 members |")
    out.append("|---|--:|---|--:|--:|")
    for cfg, c in [("standalone", 1), ("cluster1", 1), ("cluster2", 1), ("cluster3", 1),
                   ("standalone", 64), ("cluster1", 64), ("cluster2", 64), ("cluster3", 64),
                   ("cluster2", 128), ("cluster3", 192)]:
        shard = res.shard_cpu(cfg, c)
        out.append(f"| {LABEL[cfg]} | {c} | {' / '.join(fmt(x) for x in shard)} | "
                   f"{fmt(sum(shard))} | {fmt(3 * sum(shard))} |")
    out.append("")

    # ---- instructions per lock ----------------------------------------------------------------
    pairs = {}
    for line in (res.d / "callgrind.txt").read_text().splitlines():
        cfg, n, pair, total = line.split()
        pairs.setdefault((cfg, pair), {})[int(n)] = int(total)
    small, big = meta["cg_small"], meta["cg_big"]
    out.append(f"| Members | Instructions per lock, median of {meta['cg_pairs']} pairs | "
               "Each pair | ÷ standalone | Goal | Met |")
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
        goal, met = "", ""
        if cfg != "standalone":
            goal, met = "≤ 1.10", "met" if x <= 1.10 else "not met"
            verdict_ir = verdict_ir and x <= 1.10
        out.append(f"| {LABEL[cfg]} | {fmt(median)} | {', '.join(fmt(e) for e in each)} | "
                   f"{x:.3f} | {goal} | {met} |")
    out.append("")
    routed = dict(line.split() for line in (res.d / "callgrind-routed.txt").read_text().splitlines())
    out.append("Of which the member's routing layer itself (self instructions of routed_member, "
               "cluster_router, cluster_routing and the redirection reader, first pair): "
               + ", ".join(f"{LABEL[c]} {fmt(float(routed[c]))}" for c in ("cluster1", "cluster3"))
               + ".")
    out.append("")

    # ---- goals --------------------------------------------------------------------------------
    out.append("| Goal | Measured | Verdict |")
    out.append("|---|---|---|")
    out.append(f"| each shard serves 1/S ± 10 % of its member's commands | worst shard "
               f"{worst_all:+.1%} off 1/S (S = 1, 2, 3) | {'met' if verdict_share else 'not met'} |")
    out.append(f"| client instructions per lock ≤ 1.10 × standalone | 1 shard "
               f"{per_lock['cluster1'][0] / per_lock['standalone'][0]:.3f}, 3 shards "
               f"{per_lock['cluster3'][0] / per_lock['standalone'][0]:.3f} | "
               f"{'met' if verdict_ir else 'not met'} |")
    worst_tp = min(ratio["cluster1", 1], ratio["cluster1", 64])
    out.append(f"| uncontended throughput, 1-shard members ≥ 0.9 × standalone | "
               f"{ratio['cluster1', 1]:.2f} at 1 in flight, {ratio['cluster1', 64]:.2f} at 64 "
               f"(median of the per-repetition ratios) | {'met' if worst_tp >= 0.9 else 'not met'} |")
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
    for cfg in ("standalone", "cluster1", "cluster2", "cluster3"):
        c = 64 * SHARDS[cfg]
        busiest = max(res.shard_cpu(cfg, c))
        server = 1e6 / busiest
        server_base = server_base or server
        client = res.mode(cfg, c)["client_cpu_us_per_lock"]
        out.append(f"| {LABEL[cfg]} | {c} | {fmt(busiest)} | {fmt(server)} | "
                   f"{server / server_base:.2f} | {fmt(client)} | {fmt(1e6 / client)} | "
                   f"{fmt(min(server, 1e6 / client))} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
