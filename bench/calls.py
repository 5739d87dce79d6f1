"""AWS calls per operation of one azevac binary on an estate of N Auto Scaling groups (issue 12).

A call count does not depend on the machine, so this answers "what does the journal protocol cost
in calls" exactly, on a debug or a release build alike. Usage (from the repository root):

    scripts/moto-env && cargo build --bin azevac
    .venv-moto/bin/python bench/calls.py [--groups 1000] [--binary target/debug/azevac]

It starts its own moto server, seeds N groups over three zones (bench.py's estate), runs
`evacuate --az-id use1-az2 --type asg --yes --stats --output json` and then `recover`, and prints the
calls per operation of each and the totals.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, TARGET_ID, env_for, seed, start_moto  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "azevac"))
    args = parser.parse_args()
    moto, port = start_moto(os.path.join(ROOT, ".venv-moto", "bin", "python"))
    try:
        seed(port, args.groups, 0, 0, False)
        env = env_for(port)
        subprocess.run([args.binary, "init"], env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"{args.groups} Auto Scaling groups, {args.binary}")
        for command in ("evacuate", "recover"):
            started = time.perf_counter()
            out = subprocess.run([args.binary, command, "--az-id", TARGET_ID, "--type", "asg", "--yes", "--stats",
                                  "--output", "json", "--no-progress"], env=env, capture_output=True, text=True)
            elapsed = time.perf_counter() - started
            if out.returncode != 0:
                sys.exit(f"{command} exited {out.returncode}: {out.stderr[-2000:]}")
            stats = json.loads(out.stdout)["stats"]
            print(f"\n{command}: {stats['total_calls']} calls ({stats['total_retries']} retries), {elapsed:.1f} s")
            for operation, count in sorted(stats["operations"].items()):
                print(f"  {operation:45} {count['calls']:6}")
    finally:
        moto.terminate()


if __name__ == "__main__":
    main()
