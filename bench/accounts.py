"""Many accounts (issues 16 and 35): `azevac evacuate/recover --accounts` over K accounts of N mixed resources
each (60 % Auto Scaling groups, 20 % ECS services, 20 % Lambda functions), against one account of N, with a
fixed latency added to every call. Run through bench/run-accounts. Not a test: it prints a table.

AWS serves and throttles each account on its own; one moto process serving every account does not (it is one
interpreter on one core), so this bench gives the accounts emulators of their own:

- a central server answers STS, Organizations and the caller's own account;
- the journal (DynamoDB) has a server of its own, as in bench.py;
- the member accounts are spread over `--servers` moto servers (one per account up to that many), each
  answering only for the accounts routed to it.

One proxy in front of them all adds the latency, counts the calls and routes each by its signing credentials,
as AWS does: a request signed with credentials that an AssumeRole of the central server handed out goes to
the server of the account whose role was assumed (moto is told the account in its `x-moto-account-id`
header); a DynamoDB request goes to the journal's; anything else to the central one.

The machine still has only so many cores for every emulator, so each row reports, beside the wall time:
- the critical path: the longest chain of calls in which each started after the one before had ended (round
  trips that happened one after another), with how many fell in each of azevac's phases (`--stats`);
- what each call took beyond the latency added (the emulators' own time, queueing included);
- the emulators' busy time (CPU seconds of every moto server, and of the journal's) and azevac's own CPU;
- azevac's peak resident memory.
The proxy is this Python process, so its CPU is reported too. `floor` is the CPU every process of the row
used (emulators, proxy, azevac) over the machine's cores: no run on this machine can be faster, and a row near
its floor waited on the machine, not on azevac.
"""

import argparse
import heapq
import os
import platform
import re
import statistics
import threading
import time
import urllib.parse

import boto3

from harness import AZEVAC, ROOT, SCOPE, TARGET_ID, env_for, log, relay, run_captured, run_peak, seed, serve, start_moto

TYPES = "asg,ecs,lambda"
TICK = os.sysconf("SC_CLK_TCK")
PHASE = re.compile(r"^\s+phase (.+?)\s+(\d+) ms$")
AKID = re.compile(r"Credential=([^/]+)/")


def accounts(n):
    return [f"{100000000000 + i:012d}" for i in range(1, n + 1)]


def cpu_seconds(pid):
    """User plus system CPU seconds of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def operation(handler, body):
    """`service:Operation` of a request, as the SDK names it: the JSON protocols' X-Amz-Target, the query
    protocols' Action, else (REST: Lambda) the method and the path's first segments."""
    m = SCOPE.search(handler.headers.get("Authorization", ""))
    service = m.group(1) if m else "?"
    target = handler.headers.get("X-Amz-Target")
    if target:
        return f"{service}:{target.rsplit('.', 1)[-1]}"
    if body and b"Action=" in body:
        action = urllib.parse.parse_qs(body.decode(errors="replace")).get("Action", ["?"])[0]
        return f"{service}:{action}"
    path = "/".join(handler.path.split("?")[0].split("/")[:3])
    return f"{service}:{handler.command} {path}"


class Fleet:
    """The emulators of one row and the proxy that routes to them."""

    def __init__(self, python, members, servers, latency):
        self.latency = latency
        self.central, self.central_port = start_moto(python)
        self.journal, self.journal_port = start_moto(python)
        count = max(1, min(servers, len(members)))
        started = [start_moto(python) for _ in range(count)]
        self.members = [p for p, _ in started]
        self.server_of = {account: started[i % count][1] for i, account in enumerate(members)}
        self.assumed = {}  # access key ID -> account, from the central server's AssumeRole answers
        self.lock = threading.Lock()
        self.calls = []  # (start, end, operation) of every call since the last take()
        fleet = self

        def forward(handler, body):
            started = time.perf_counter()
            if fleet.latency:
                time.sleep(fleet.latency)
            port, account = fleet.route(handler.headers)
            # Learnt before the client has the answer: its next call, signed with the new key, must
            # find its account.
            learn = None
            if port == fleet.central_port and body and b"Action=AssumeRole" in body:
                learn = lambda answer: fleet.learn(body, answer)  # noqa: E731
            relay(handler, port, body, {"x-moto-account-id": account} if account else None, learn)
            with fleet.lock:
                fleet.calls.append((started, time.perf_counter(), operation(handler, body)))

        self.server, self.port = serve(forward)

    def route(self, headers):
        """(port, account moto should act in) for a request, by its SigV4 scope and access key."""
        authorization = headers.get("Authorization", "")
        scope = SCOPE.search(authorization)
        if scope and scope.group(1) == "dynamodb":
            return self.journal_port, None
        key = AKID.search(authorization)
        account = self.assumed.get(key.group(1)) if key else None
        if account:
            return self.server_of[account], account
        return self.central_port, None

    def learn(self, body, answer):
        role = urllib.parse.parse_qs(body.decode(errors="replace")).get("RoleArn", [""])[0]
        key = re.search(rb"<AccessKeyId>([^<]+)</AccessKeyId>", answer or b"")
        if key and role.count(":") >= 5:
            self.assumed[key.group(1).decode()] = role.split(":")[4]

    def pids(self):
        return [p.pid for p in (self.central, self.journal, *self.members)]

    def take(self):
        with self.lock:
            calls, self.calls = self.calls, []
        return calls

    def credentials(self, account):
        sts = boto3.client("sts", endpoint_url=f"http://127.0.0.1:{self.port}", region_name="us-east-1",
                           aws_access_key_id="testing", aws_secret_access_key="testing")
        role = f"arn:aws:iam::{account}:role/azevac"
        return sts.assume_role(RoleArn=role, RoleSessionName="seed")["Credentials"]

    def close(self):
        self.server.shutdown()
        for process in (self.central, self.journal, *self.members):
            process.kill()
            process.wait()


def critical_path(calls):
    """The longest chain of calls each started after the previous one ended: its calls, in order. Calls in
    start order; the calls ended by then enter a running best as they end (O(n log n))."""
    calls = sorted(calls)
    ending = []  # (end, index) of calls not yet ended at the start being looked at
    best = []  # best[i]: (length of the longest chain ending with call i, previous call)
    leader = (0, None)  # the longest chain among the calls ended so far: (length, its last call)
    for i, (start, end, _) in enumerate(calls):
        while ending and ending[0][0] <= start:
            _, j = heapq.heappop(ending)
            if best[j][0] > leader[0]:
                leader = (best[j][0], j)
        best.append((leader[0] + 1, leader[1]))
        heapq.heappush(ending, (end, i))
    if not calls:
        return []
    i = max(range(len(calls)), key=lambda k: best[k][0])
    chain = []
    while i is not None:
        chain.append(calls[i])
        i = best[i][1]
    return chain[::-1]


def by_phase(chain, began, phases):
    """How many calls of the chain fell in each of azevac's phases (from `--stats`, in order)."""
    counts, end = [], began
    for name, ms in phases:
        start, end = end, end + ms / 1000
        counts.append((name, sum(1 for c in chain if start <= c[0] < end), ms))
    return counts


def run(fleet, args, env):
    """One azevac command with --stats: seconds, CPU, peak RSS, calls, critical path, emulator busy time."""
    pids = fleet.pids()
    busy_before = {pid: cpu_seconds(pid) for pid in pids}
    fleet.take()
    proxy_before = time.process_time()  # this process's CPU: during the run, the proxy's alone
    began = time.perf_counter()
    children = os.times()
    r = run_peak([AZEVAC, *args, "--stats", "--no-progress"], env)
    r["cpu"] -= children.children_user + children.children_system
    if r["code"] != 0:
        raise SystemExit(f"azevac {' '.join(args)} exited {r['code']}: {r['stderr'][-2000:]}")
    busy = [cpu_seconds(pid) - busy_before[pid] for pid in pids]
    proxy = time.process_time() - proxy_before
    calls = fleet.take()
    chain = critical_path(calls)
    # What each call waited beyond the latency added: the emulators' own time, queueing included.
    waits = sorted(end - start - fleet.latency for start, end, _ in calls) or [0.0]
    phases = [(m.group(1), int(m.group(2))) for m in map(PHASE.match, r["stderr"].splitlines()) if m]
    return {"seconds": r["seconds"], "cpu": r["cpu"], "rss_mb": r["rss_mb"], "calls": len(calls),
            "chain": len(chain), "phases": by_phase(chain, began, phases), "busy": sum(busy),
            "busiest": max(busy), "journal": busy[1], "proxy": proxy,
            "wait_ms": (statistics.mean(waits) * 1000, waits[int(len(waits) * 0.95)] * 1000), "ops": [c[2] for c in chain]}


def median_run(runs):
    """The run with the median wall time (its other figures go with it)."""
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def row(python, k, n, args):
    """Seed K accounts of N on a fresh fleet; evacuate and recover them `args.runs` times."""
    members = accounts(k)
    fleet = Fleet(python, members, args.servers, 0)
    try:
        for account in members:
            seed(fleet.port, n * 6 // 10, n * 2 // 10, n - n * 6 // 10 - n * 2 // 10, tag_for_peer=False,
                 credentials=fleet.credentials(account), workers=4)
        log(f"seeded {k} account(s) of {n}")
        fleet.latency = args.latency_ms / 1000
        env = env_for(fleet.port)
        # The journal exists before the incident (`azevac init`), as the runbook has it.
        r = run_captured([AZEVAC, "init"], env)
        if r["code"] != 0:
            raise SystemExit(f"azevac init exited {r['code']}: {r['stderr'][-2000:]}")
        fleet_flag = ["--accounts", ",".join(members), "--account-concurrency", str(args.account_concurrency)]
        ev, rc = [], []
        for _ in range(args.runs):
            ev.append(run(fleet, ["evacuate", "--az-id", TARGET_ID, "--type", TYPES, "--yes", *fleet_flag], env))
            rc.append(run(fleet, ["recover", "--az-id", TARGET_ID, "--type", TYPES, "--yes", *fleet_flag], env))
            log(f"{k} x {n}: evacuate {ev[-1]['seconds']:.2f} s, recover {rc[-1]['seconds']:.2f} s")
        return median_run(ev), median_run(rc)
    finally:
        fleet.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fleets", default="20x50,200x10",
                        help="KxN,...: K accounts of N resources each, each against one account of N")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--servers", type=int, default=4, help="moto servers the member accounts are spread over")
    parser.add_argument("--account-concurrency", type=int, default=64)
    args = parser.parse_args()
    venv = ".venv-bench" if os.path.exists(os.path.join(ROOT, ".venv-bench")) else ".venv-moto"
    python = os.path.join(ROOT, venv, "bin", "python")
    cores = os.cpu_count()
    table = []
    for fleet in args.fleets.split(","):
        k, n = (int(x) for x in fleet.split("x"))
        one = row(python, 1, n, args)
        many = row(python, k, n, args)
        table.append((f"1 account of {n}", n, one, one))
        table.append((f"{k} accounts of {n}", k * n, many, one))
    print("| estate | resources | command | wall s | vs 1 account | calls | critical path (calls) | "
          "wall / critical path | emulator ms per call (mean, p95) | emulators busy s (journal's) | proxy CPU s | floor s | "
          "azevac CPU s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    latency = args.latency_ms / 1000
    for name, total, runs, base in table:
        for command, r, b in (("evacuate", runs[0], base[0]), ("recover", runs[1], base[1])):
            path = r["chain"] * latency
            print(f"| {name} | {total:,} | {command} | {r['seconds']:.2f} | {r['seconds'] / b['seconds']:.2f}x "
                  f"| {r['calls']:,} | {r['chain']} | {r['seconds'] / path:.2f} | {r['wait_ms'][0]:.0f}, {r['wait_ms'][1]:.0f} | {r['busy']:.1f} ({r['journal']:.1f}) "
                  f"| {r['proxy']:.1f} | {(r['busy'] + r['proxy'] + r['cpu']) / cores:.2f} | {r['cpu']:.2f} | {r['rss_mb']:.0f} |")
    print(f"\n{args.latency_ms:.0f} ms added to every call; median of {args.runs} runs; "
          f"{args.account_concurrency} accounts at a time; members on {args.servers} moto servers; {AZEVAC}")
    print(f"machine: {platform.platform()}, {cores} cores\n")
    print("Critical path by phase (calls one after another / phase ms):")
    for name, _, runs, _ in table:
        for command, r in (("evacuate", runs[0]), ("recover", runs[1])):
            parts = ", ".join(f"{phase} {count} / {ms}" for phase, count, ms in r["phases"])
            print(f"- {name}, {command}: {parts}")
            # Across accounts the longest chain hops between accounts that merely took turns: only one
            # account's chain is the round trips that must happen one after another.
            if name.startswith("1 account"):
                print(f"  {' > '.join(r['ops'])}")


if __name__ == "__main__":
    main()
