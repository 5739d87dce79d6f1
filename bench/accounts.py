"""Many accounts (issue 16): `azevac evacuate/recover --accounts` over 20 accounts of 50 mixed
resources each, against one account of 50, on one moto server behind a proxy adding 50 ms to every
call. moto serves every account from one process, so this measures azevac's fan-out (accounts in
parallel, each paced on its own) plus the emulator's own throughput, which real AWS does not share
between accounts. Run through bench/run-accounts. Not a test: it prints a table.
"""

import argparse
import os
import platform
import statistics

import boto3

from harness import AZEVAC, TARGET_ID, Proxy, env_for, reset, run_measured, seed, start_moto, ROOT


def member_credentials(port, account):
    sts = boto3.client("sts", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    return sts.assume_role(RoleArn=f"arn:aws:iam::{account}:role/azevac", RoleSessionName="seed")["Credentials"]


def accounts(n):
    return [f"{100000000000 + i:012d}" for i in range(1, n + 1)]


def measure(proxy, runs, args, env):
    ev, rc, ev_calls, rc_calls = [], [], [], []
    for _ in range(runs):
        proxy.take()
        ev.append(run_measured([AZEVAC, "evacuate", "--az-id", TARGET_ID, "--type", "asg,ecs,lambda", "--yes", *args], env)[0])
        ev_calls.append(proxy.take())
        rc.append(run_measured([AZEVAC, "recover", "--az-id", TARGET_ID, "--type", "asg,ecs,lambda", "--yes"], env)[0])
        rc_calls.append(proxy.take())
    return statistics.median(ev), statistics.median(rc), statistics.median(ev_calls), statistics.median(rc_calls)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accounts", type=int, default=20)
    parser.add_argument("--per-account", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    n = args.per_account
    venv = ".venv-bench" if os.path.exists(os.path.join(ROOT, ".venv-bench")) else ".venv-moto"
    moto, port = start_moto(os.path.join(ROOT, venv, "bin", "python"))
    try:
        proxy = Proxy(port, args.latency_ms / 1000)
        env = env_for(proxy.port)
        rows = []
        # One account of N, reached with the caller's own credentials.
        reset(port)
        seed(port, n * 6 // 10, n * 2 // 10, n * 2 // 10, tag_for_peer=False,
             credentials=member_credentials(port, accounts(1)[0]))
        rows.append(("1 account", n, measure(proxy, args.runs, ["--accounts", accounts(1)[0]], env)))
        # K accounts of N each, one command.
        reset(port)
        for account in accounts(args.accounts):
            seed(port, n * 6 // 10, n * 2 // 10, n * 2 // 10, tag_for_peer=False,
                 credentials=member_credentials(port, account))
        fleet = ",".join(accounts(args.accounts))
        rows.append((f"{args.accounts} accounts", n * args.accounts, measure(proxy, args.runs, ["--accounts", fleet], env)))
    finally:
        moto.kill()
    base = rows[0][2]
    print(f"| estate | resources | evacuate median s | recover median s | calls evacuate / recover | calls per resource | time vs 1 account (evacuate / recover) |")
    print("|---|---|---|---|---|---|---|")
    for name, total, (ev, rc, evc, rcc) in rows:
        print(f"| {name} | {total} | {ev:.2f} | {rc:.2f} | {evc:.0f} / {rcc:.0f} | {evc / total:.2f} / {rcc / total:.2f} "
              f"| {ev / base[0]:.2f} / {rc / base[1]:.2f} |")
    print(f"\n{args.latency_ms:.0f} ms added to every call; {args.runs} runs each; {AZEVAC}")
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
