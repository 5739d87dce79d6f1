"""Benchmark azevac against moto server: every row of the performance issue, in one run, in one table.

Run through bench/run, which installs what this needs. The rows (N = --sizes, default 1,000):
  1. N ASGs, no added latency, fixed emulator: azevac and the peer (aws-az-failure-chaostoolkit) on the same
     server; wall time and calls, ratios azevac/peer; bound = azevac's calls / the emulator's own rate for
     this workload (N UpdateAutoScalingGroup calls from 16 boto3 threads straight to moto).
  2. The same on unchanged moto, at --unfixed-size groups (default 200: at 1,000 a journal transaction on moto
     unchanged outlasts azevac's 30 s --attempt-timeout; informational).
  3. N mixed resources (60% ASG, 20% ECS, 20% Lambda), 50 ms per call, no rate limit anywhere (azevac's own
     pacing lifted); bound = calls x latency / concurrency.
  4. The same estate under ratelimit.py's control-plane model (log-normal latency, token buckets), standard
     retry mode, azevac's pacing matched to the model; bound = the slowest bucket's accepted calls / rate.
  5. --big mixed resources (default 5,000) as in row 3: time against row 3's, peak RSS.
API calls are counted at the proxy, the same way for both tools. Peak RSS comes from wait4().
"""

import argparse
import importlib.metadata
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time

import ratelimit
from harness import (AZEVAC, TARGET_ID, TARGET_NAME, Moto, Proxy, clients, env_for, in_parallel, log,
                     run_captured, seed)

CONCURRENCY = 16  # azevac's default --concurrency, the bound of rows 3 and 5

WARNING = re.compile(r"\b(WARN|ERROR)\b")
TIMESTAMP = re.compile(r"^\S*\d{4}-\d\d-\d\dT\S+\s+")


def warnings_of(stderr):
    """azevac's WARN and ERROR lines, without their timestamps: they are what a benchmark can reveal beyond
    timings (retries given up, throttling, fallbacks)."""
    return [TIMESTAMP.sub("", line) for line in stderr.splitlines() if WARNING.search(line)]


PHASE = re.compile(r"^\s*phase (.+?)\s+(\d+) ms\s*$")


def phases_of(stderr):
    """azevac --stats' wall time per phase ("discover and plan", "apply", ...): where a slow run spends it."""
    return [(m.group(1), int(m.group(2))) for m in map(PHASE.match, stderr.splitlines()) if m]


def cpu_seconds(pid):
    """CPU time (user + system) a running process has used, from /proc; None when unknown. Against wall time,
    it shows whether a row was bound by the 2 cores (moto, the proxy and azevac share them) or by waiting."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def cpu_each(pids):
    """cpu_seconds of each process in turn (None for one that cannot be read)."""
    return [cpu_seconds(pid) for pid in pids]


def cpu_since(pids, before):
    """The CPU seconds each of `pids` used since cpu_each gave `before`; None if any is unknown."""
    after = cpu_each(pids)
    if not pids or None in after or None in before:
        return None
    return [a - b for a, b in zip(after, before)]


def own_cpu():
    usage = os.times()
    return usage.user + usage.system


def measure(proxy, runs, evacuate, recover):
    """Alternate evacuate and recover `runs` times; medians, extremes and calls of each, peak RSS, and of the
    last run (the one on an estate already evacuated and recovered before) the WARN lines, phases and CPU."""
    done = {"evacuate": [], "recover": []}
    for _ in range(runs):
        for command, run in (("evacuate", evacuate), ("recover", recover)):
            proxy.take(); proxy.take_peak()
            moto_cpu, proxy_cpu = cpu_each(proxy.moto_pids), own_cpu()
            r = run()
            r["calls"], r["peak"] = proxy.take(), proxy.take_peak()
            r["cpu_moto"] = cpu_since(proxy.moto_pids, moto_cpu)
            r["cpu_proxy"] = own_cpu() - proxy_cpu
            done[command].append(r)
    result = {"rss_mb": max(r["rss_mb"] for rs in done.values() for r in rs), "warnings": [], "phases": {},
              "peak": {}, "cpu": {}}
    for command, rs in done.items():
        times = [r["seconds"] for r in rs]
        last = rs[-1]
        result[command] = (statistics.median(times), min(times), max(times))
        result[f"{command}_calls"] = statistics.median(r["calls"] for r in rs)
        result["peak"][command] = max(r["peak"] for r in rs)
        result["warnings"] += [(command, w) for w in warnings_of(last["stderr"])]
        result["phases"][command] = phases_of(last["stderr"])
        result["cpu"][command] = (last["seconds"], last["cpu"], last["cpu_moto"], last["cpu_proxy"])
    return result


def must_succeed(cmd, env):
    """run_captured, exiting the benchmark when the command fails (rows 1-3 and 5 must run clean)."""
    r = run_captured(cmd, env)
    if r["code"] != 0:
        sys.exit(f"{' '.join(cmd)} exited {r['code']}: {r['stderr'][-2000:]}")
    return r


def azevac_command(command, types, *extra):
    return [AZEVAC, command, "--az-id", TARGET_ID, "--type", types, "--yes", *extra]


def bench_azevac(proxy, runs, types, extra_env=None):
    env = dict(env_for(proxy.port), **(extra_env or {}))
    must_succeed([AZEVAC, "init"], env)
    # --stats only adds the per-phase wall times to stderr (calls are counted at the proxy all the same).
    evac = lambda: must_succeed(azevac_command("evacuate", types, "--stats"), env)
    rec = lambda: must_succeed(azevac_command("recover", types, "--stats"), env)
    return measure(proxy, runs, evac, rec)


def bench_peer(proxy, runs):
    env = env_for(proxy.port)
    state = os.path.join(tempfile.mkdtemp(), "fail_az.asg.json")
    code_fail = ("import logzero, logging; logzero.loglevel(logging.ERROR);"
                 "from azchaosaws.asg.actions import fail_az;"
                 f"fail_az(az='{TARGET_NAME}', dry_run=False, state_path='{state}')")
    code_recover = ("import logzero, logging; logzero.loglevel(logging.ERROR);"
                    "from azchaosaws.asg.actions import recover_az;"
                    f"recover_az(state_path='{state}')")
    evac = lambda: must_succeed([sys.executable, "-c", code_fail], env)
    rec = lambda: must_succeed([sys.executable, "-c", code_recover], env)
    result = measure(proxy, runs, evac, rec)
    result["warnings"] = []  # the peer's logging is not azevac's
    return result


def emulator_rate(port, n, workers=CONCURRENCY):
    """The emulator's own limit for row 1's workload: calls/s of N UpdateAutoScalingGroup calls sent straight
    to moto from `workers` boto3 threads, on the seeded estate. Each call sets the group's subnets to the ones
    it has, so the estate azevac then evacuates is unchanged."""
    asg = clients(port, pool=workers)["autoscaling"]
    groups = [(g["AutoScalingGroupName"], g["VPCZoneIdentifier"])
              for page in asg.get_paginator("describe_auto_scaling_groups").paginate() for g in page["AutoScalingGroups"]]
    groups = (groups * (n // max(len(groups), 1) + 1))[:n]
    start = time.perf_counter()
    in_parallel(workers, lambda i: asg.update_auto_scaling_group(AutoScalingGroupName=groups[i][0],
                                                                 VPCZoneIdentifier=groups[i][1]), n)
    return n / (time.perf_counter() - start)


MIXED = "asg,ecs,lambda"
UNPACED = {"AZEVAC_MAX_RATE": "ec2=unlimited,lambda=unlimited"}  # rows 3 and 5: no rate limit anywhere


def mixed(n):
    """bench.seed's mix: 60% ASG, 20% ECS, 20% Lambda."""
    return n * 6 // 10, n * 2 // 10, n * 2 // 10


def row_asg(n, runs, fixed, skip_peer):
    """Rows 1 and 2: N ASGs, no added latency, azevac and the peer on the same server, and the emulator's own
    rate for the workload."""
    name = "fixed" if fixed else "unfixed"
    with Moto(fixed) as moto:
        direct = Proxy(moto.upstream, 0, moto.pids)
        moto.reset(); seed(moto.port, n, 0, 0, tag_for_peer=True)
        rate = emulator_rate(moto.port, n)
        log(f"{name} emulator: {rate:.0f} UpdateAutoScalingGroup/s from {CONCURRENCY} threads")
        azevac = bench_azevac(direct, runs, "asg")
        log(f"azevac on {n} ASGs ({name}): evacuate {azevac['evacuate'][0]:.2f} s, recover {azevac['recover'][0]:.2f} s")
        peer = None
        if not skip_peer:
            moto.reset(); seed(moto.port, n, 0, 0, tag_for_peer=True)
            peer = bench_peer(direct, runs)
            log(f"peer on {n} ASGs ({name}): evacuate {peer['evacuate'][0]:.2f} s, recover {peer['recover'][0]:.2f} s")
    return {"n": n, "emulator": name, "rate": rate, "azevac": azevac, "peer": peer}


def row_mixed(n, runs, latency_ms):
    """Rows 3 and 5: the mixed estate, a fixed latency per call, no rate limit anywhere (azevac's own pacing
    lifted too)."""
    with Moto() as moto:
        slow = Proxy(moto.upstream, latency_ms / 1000, moto.pids)
        moto.reset(); seed(moto.port, *mixed(n), tag_for_peer=False)
        r = bench_azevac(slow, runs, MIXED, UNPACED)
    log(f"azevac on {n} mixed at {latency_ms:g} ms: evacuate {r['evacuate'][0]:.2f} s, recover {r['recover'][0]:.2f} s, "
        f"peak RSS {r['rss_mb']:.0f} MB")
    return {"n": n, "latency_ms": latency_ms, "azevac": r}


def failed_lines(stdout):
    """Lines whose status is "failed" in azevac's --output json document (None if it printed none)."""
    try:
        return sum(1 for item in json.loads(stdout).get("items", []) if item.get("status") == "failed")
    except ValueError:
        return None


def row_model(n, runs, limits):
    """Row 4: the mixed estate under ratelimit.py's control-plane model, standard retry mode, azevac's pacing
    matched to the model. A failing line is a result here, not an abort."""
    pacing = ratelimit.matched_pacing(limits)
    env_extra = {"AWS_RETRY_MODE": "standard", "AWS_MAX_ATTEMPTS": "8"}
    if pacing:
        env_extra["AZEVAC_MAX_RATE"] = pacing
    results = {"evacuate": [], "recover": []}
    warnings, phases, cpu = [], {}, {}
    with Moto() as moto:
        proxy = ratelimit.ModelProxy(moto.upstream, limits)
        moto.reset(); seed(moto.port, *mixed(n), tag_for_peer=False)
        env = dict(env_for(proxy.port), **env_extra)
        must_succeed([AZEVAC, "init"], env)
        for run in range(runs):
            for command in ("evacuate", "recover"):
                proxy.take()
                moto_cpu, proxy_cpu = cpu_each(moto.pids), own_cpu()
                r = run_captured(azevac_command(command, MIXED, "--output", "json", "--stats"), env)
                calls, throttled = proxy.take()
                b, key = ratelimit.bound(calls, throttled, limits)
                stats = json.loads(r["stdout"]).get("stats", {}) if failed_lines(r["stdout"]) is not None else {}
                results[command].append({
                    "wall": r["seconds"], "bound": b, "key": key, "calls": sum(calls.values()),
                    "throttled": sum(throttled.values()), "by_key": (calls, throttled), "code": r["code"],
                    "failed": failed_lines(r["stdout"]), "retries": stats.get("total_retries")})
                warnings += [(command, w) for w in warnings_of(r["stderr"])]
                phases[command] = phases_of(r["stderr"])
                cpu[command] = (r["seconds"], r["cpu"], cpu_since(moto.pids, moto_cpu), own_cpu() - proxy_cpu)
                last = results[command][-1]
                log(f"model run {run + 1}, {command}: {last['wall']:.1f} s, bound {b:.1f} s ({key}), exit {r['code']}, "
                    f"{last['throttled']}/{last['calls']} throttled, failed lines {last['failed']}")
    return {"n": n, "pacing": pacing, "limits": limits, "runs": results, "warnings": warnings, "phases": phases, "cpu": cpu}


# The table: one line per (row, command); "met" says which target is missed.

def fmt_time(t):
    median, low, high = t
    return f"{median:.2f} s" if low == high else f"{median:.2f} s ({low:.2f}-{high:.2f})"


def verdict(checks):
    """'yes', or 'NO' and the targets missed; '-' when there is nothing to check."""
    if not checks:
        return "-"
    missed = [name for name, ok in checks if not ok]
    return "yes" if not missed else "NO: " + ", ".join(missed)


def lines_asg(row, number, fixed_row=None):
    """Table lines of row 1 or 2: azevac vs the peer, and azevac's wall against the emulator's rate."""
    out = []
    a, p = row["azevac"], row["peer"]
    for command in ("evacuate", "recover"):
        calls = a[f"{command}_calls"]
        wall = a[command][0]
        bound = calls / row["rate"]
        measured = f"azevac {fmt_time(a[command])}, {calls:.0f} calls, {a['peak'][command]} in flight at most"
        checks = []
        if p:
            t_ratio, c_ratio = wall / p[command][0], calls / max(p[f"{command}_calls"], 1)
            measured += (f"; peer {fmt_time(p[command])}, {p[f'{command}_calls']:.0f} calls; "
                         f"azevac/peer time {t_ratio:.3f}, calls {c_ratio:.3f}")
            checks = [("time", t_ratio <= 0.15)]
            # The calls target is the evacuation's (the peer's 6 calls a group); a recovery needs one update
            # a group, which is already 0.25 of the peer's 4, so there it is reported, not checked.
            if command == "evacuate":
                checks.append(("calls", c_ratio <= 0.2))
        if fixed_row:
            measured += f"; azevac unfixed/fixed time {wall / fixed_row['azevac'][command][0]:.2f}"
        target = "- (informational)"
        if number == 1 and p:
            target = ("azevac/peer time <= 0.15, calls <= 0.2" if command == "evacuate"
                      else "azevac/peer time <= 0.15 (calls: one update a group is 0.25 of the peer's 4)")
        out.append((number, f"{row['n']} ASGs, 0 ms, {row['emulator']} emulator", command, measured,
                    f"{calls:.0f} calls / {row['rate']:.0f} calls/s = {bound:.2f} s; wall/bound {wall / bound:.2f}",
                    target, verdict(checks) if number == 1 else "-"))
    return out


def latency_bound(calls, latency_ms):
    return calls * latency_ms / 1000 / CONCURRENCY


def lines_mixed(row, number, base=None):
    """Table lines of row 3 (10 s targets) or row 5 (time against row 3's, peak RSS)."""
    out = []
    a, n = row["azevac"], row["n"]
    for command in ("evacuate", "recover"):
        calls, wall = a[f"{command}_calls"], a[command][0]
        bound = latency_bound(calls, row["latency_ms"])
        measured = (f"{fmt_time(a[command])}, {calls:.0f} calls, {a['peak'][command]} in flight at most, "
                    f"mean concurrency {calls * row['latency_ms'] / 1000 / wall:.1f} (calls x latency / wall)")
        bound_text = (f"{calls:.0f} x {row['latency_ms'] / 1000:.3f} s / {CONCURRENCY} = {bound:.2f} s; "
                      f"wall/bound {wall / bound:.2f}")
        if number == 3:
            target, checks = "<= 10 s", [("time", wall <= 10)]
        else:
            scale = n / base["n"]
            limit = 1.1 * scale  # the 5.5 for 5,000 against 1,000
            ratio = wall / base["azevac"][command][0]
            measured += f"; {ratio:.2f} x row 3's ({n} vs {base['n']} resources)"
            target, checks = f"time / row 3's <= {limit:.2f}", [("ratio", ratio <= limit)]
        out.append((number, f"{n} mixed, {row['latency_ms']:g} ms, unpaced", command, measured, bound_text, target,
                    verdict(checks)))
    if number == 5:
        out.append((5, f"{n} mixed, {row['latency_ms']:g} ms, unpaced", "both", f"peak RSS {a['rss_mb']:.0f} MB", "-",
                    "<= 150 MB", verdict([("RSS", a["rss_mb"] <= 150)])))
    return out


def bucket_detail(run, limits):
    """How the bound of one run comes about: its slowest bucket's accepted calls, burst and rate."""
    key = run["key"]
    if not key:
        return "no bucket past its burst"
    calls, throttled = run["by_key"]
    rate, burst = limits[key]
    accepted = calls.get(key, 0) - throttled.get(key, 0)
    return f"bucket {key}: ({accepted} accepted - burst {burst}) / {rate:g}/s"


def lines_model(row):
    """Table lines of row 4: the medians over runs of wall and bound, throttling and failed lines over all."""
    out = []
    for command, runs in row["runs"].items():
        wall = statistics.median(r["wall"] for r in runs)
        bound = statistics.median(r["bound"] for r in runs)
        ratio = statistics.median(r["wall"] / r["bound"] if r["bound"] else float("inf") for r in runs)
        calls, throttled = sum(r["calls"] for r in runs), sum(r["throttled"] for r in runs)
        share = 100 * throttled / max(calls, 1)
        failed = [r["failed"] for r in runs]
        unparsed = any(f is None for f in failed)
        n_failed = sum(f or 0 for f in failed)
        codes = sorted({r["code"] for r in runs})
        retries = [r["retries"] for r in runs if r["retries"] is not None]
        by_bucket = {}
        for r in runs:
            for key, count in r["by_key"][1].items():
                by_bucket[key] = by_bucket.get(key, 0) + count
        where = ", ".join(f"{k} {v}" for k, v in sorted(by_bucket.items()))
        measured = (f"wall {wall:.1f} s, {calls / len(runs):.0f} calls/run, throttled {throttled} ({share:.1f}%{': ' + where if where else ''}), "
                    f"failed lines {n_failed}{' (+ a run without JSON)' if unparsed else ''}, exit {codes}"
                    + (f", azevac retries {sum(retries)}" if retries else ""))
        checks = [("wall/bound", ratio <= 1.15), ("throttled", share <= 2), ("failed", n_failed == 0 and not unparsed),
                  ("exit 0", codes == [0])]
        out.append((4, f"{row['n']} mixed, rate-limit model, standard retries, pacing {row['pacing'] or 'defaults'}", command, measured,
                    f"{bound:.1f} s ({bucket_detail(runs[-1], row['limits'])}); wall/bound {ratio:.2f}",
                    "wall/bound <= 1.15, throttled <= 2%, failed 0", verdict(checks)))
    return out


def print_table(lines):
    print("| row | estate and conditions | command | measured (median, min-max) | bound | target | met |")
    print("|---|---|---|---|---|---|---|")
    for line in lines:
        print("| " + " | ".join(str(x) for x in line) + " |")


def print_warnings(sections):
    """azevac's WARN/ERROR lines per row, each distinct message (digits folded) once with its count."""
    print("\nazevac WARN/ERROR lines on stderr (rows 1-3, 5: the last run; row 4: every run):")
    any_line = False
    for name, warnings in sections:
        counts = {}
        for command, line in warnings:
            shape = (command, re.sub(r"[0-9a-f]{8,}|\d+", "#", line))
            counts.setdefault(shape, [0, line])[0] += 1
        for (command, _), (count, example) in list(counts.items())[:20]:
            any_line = True
            print(f"- {name}, {command}, x{count}: {example[:400]}")
        if len(counts) > 20:
            print(f"- {name}: {len(counts) - 20} more distinct lines")
    if not any_line:
        print("- none")


def print_phases(sections):
    """azevac's own wall time per phase (--stats) in the last run of each row, and the CPU azevac, moto and the
    proxy used meanwhile: where the wall time goes, and whether the machine's 2 cores were the limit."""
    print("\nazevac phases (--stats) and CPU seconds (last run):")
    for name, phases, cpu in sections:
        for command, items in phases.items():
            text = ", ".join(f"{phase} {ms / 1000:.2f} s" for phase, ms in items)
            if cpu and command in cpu:
                wall, azevac, moto, proxy = cpu[command]
                moto_text = "?" if moto is None else f"{sum(moto):.2f} s"
                if moto and len(moto) == 2:
                    moto_text += f" (main {moto[0]:.2f} s, DynamoDB {moto[1]:.2f} s)"
                text += f"; wall {wall:.2f} s, CPU azevac {azevac:.2f} s, moto {moto_text}, bench proxy {proxy:.2f} s"
            print(f"- {name}, {command}: {text}")


def azevac_version():
    r = run_captured([AZEVAC, "--version"], os.environ)
    return r["stdout"].strip()


def parse_rows(text, parser):
    rows = {int(x) for x in text.split(",") if x.strip()}
    if not rows <= {1, 2, 3, 4, 5}:
        parser.error("--rows: a comma list of 1 to 5")
    return rows


def shown(new_lines):
    """A row's table lines, also logged as soon as the row ends: a long run stopped later keeps them."""
    for line in new_lines:
        log("| " + " | ".join(str(cell) for cell in line) + " |")
    return new_lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000", help="N of rows 1-4 (comma list; row 5 compares with the last)")
    parser.add_argument("--unfixed-size", type=int, default=200,
                        help="row 2's N at most (moto unchanged: a transaction's cost grows with the table)")
    parser.add_argument("--runs", type=int, default=3, help="evacuate + recover round trips per tool and row")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="latency per call in rows 3 and 5")
    parser.add_argument("--big", type=int, default=5000, help="resources of row 5 (0 skips it)")
    parser.add_argument("--rows", default="1,2,3,4,5", help="which rows to run, e.g. 4 or 1,3")
    parser.add_argument("--skip-peer", action="store_true", help="azevac only (the peer needs ~8 min per round trip at 1,000)")
    parser.add_argument("--emulator", default="fixed,unfixed",
                        help="rows 1 and 2: moto with scripts/moto_server.py's fix (row 1), unchanged moto (row 2), or both")
    parser.add_argument("--limit", action="append", default=[], help="row 4's model: SERVICE[:Action]=RATE:BURST")
    args = parser.parse_args()
    emulators = args.emulator.split(",")
    for emulator in emulators:
        if emulator not in ("fixed", "unfixed"):
            parser.error(f"--emulator: {emulator!r} is neither fixed nor unfixed")
    wanted = parse_rows(args.rows, parser)
    if "fixed" not in emulators:
        wanted.discard(1)
    if "unfixed" not in emulators:
        wanted.discard(2)
    if args.big <= 0:
        wanted.discard(5)
    sizes = [int(s) for s in args.sizes.split(",")]
    limits = ratelimit.parse_limits(args.limit)

    lines, warnings, phases = [], [], []
    unfixed_done = set()  # row 2's sizes run so far (several --sizes can come to the same --unfixed-size)
    for n in sizes:
        fixed_row = None
        if 1 in wanted:
            log(f"row 1: {n} ASGs, fixed emulator")
            fixed_row = row_asg(n, args.runs, True, args.skip_peer)
            lines += shown(lines_asg(fixed_row, 1))
            warnings.append((f"row 1 (N={n})", fixed_row["azevac"]["warnings"]))
            phases.append((f"row 1 (N={n})", fixed_row["azevac"]["phases"], fixed_row["azevac"]["cpu"]))
        if 2 in wanted and min(n, args.unfixed_size) not in unfixed_done:
            unfixed_n = min(n, args.unfixed_size)
            unfixed_done.add(unfixed_n)
            log(f"row 2: {unfixed_n} ASGs, unfixed emulator")
            row = row_asg(unfixed_n, args.runs, False, args.skip_peer)
            lines += shown(lines_asg(row, 2, fixed_row if unfixed_n == n else None))
            warnings.append((f"row 2 (N={unfixed_n})", row["azevac"]["warnings"]))
            phases.append((f"row 2 (N={unfixed_n})", row["azevac"]["phases"], row["azevac"]["cpu"]))
        base = None
        if 3 in wanted or 5 in wanted and n == sizes[-1]:
            log(f"row 3: {n} mixed, {args.latency_ms:g} ms" + ("" if 3 in wanted else " (row 5's base only)"))
            base = row_mixed(n, args.runs, args.latency_ms)
            if 3 in wanted:
                lines += shown(lines_mixed(base, 3))
            warnings.append((f"row 3 (N={n})", base["azevac"]["warnings"]))
            phases.append((f"row 3 (N={n})", base["azevac"]["phases"], base["azevac"]["cpu"]))
        if 4 in wanted:
            log(f"row 4: {n} mixed under the rate-limit model")
            row = row_model(n, args.runs, limits)
            lines += shown(lines_model(row))
            warnings.append((f"row 4 (N={n})", row["warnings"]))
            phases.append((f"row 4 (N={n})", row["phases"], row["cpu"]))
        if 5 in wanted and n == sizes[-1]:
            log(f"row 5: {args.big} mixed, {args.latency_ms:g} ms")
            big = row_mixed(args.big, args.runs, args.latency_ms)
            lines += shown(lines_mixed(big, 5, base))
            warnings.append((f"row 5 (N={args.big})", big["azevac"]["warnings"]))
            phases.append((f"row 5 (N={args.big})", big["azevac"]["phases"], big["azevac"]["cpu"]))
    log("done")
    print_table(lines)
    print(f"\nmachine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"moto {importlib.metadata.version('moto')}")
    print(f"azevac: {AZEVAC} ({azevac_version()}); {args.runs} run(s) per row")
    if 4 in wanted:
        print("row 4 model:", ratelimit.describe(limits))
    print_phases(phases)
    print_warnings(warnings)


if __name__ == "__main__":
    main()
