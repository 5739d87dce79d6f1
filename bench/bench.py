"""Benchmark azevac against moto server, side by side with a peer tool (issue 6).

Run through bench/run, which installs what this needs. For each estate size it seeds moto, puts a
counting (and optionally latency-adding) proxy in front, and times `azevac evacuate` / `recover`
and the peer's `fail_az` / `recover_az` (aws-az-failure-chaostoolkit, ASGs only) over several runs.
API calls are counted at the proxy, the same way for both tools. Peak RSS comes from wait4().
"""

import argparse
import http.client
import http.server
import io
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile

import boto3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# AZEVAC_BIN: another build (the debug one, say) for a quick run; bench/run builds the release one.
AZEVAC = os.environ.get("AZEVAC_BIN") or os.path.join(ROOT, "target", "release", "azevac")
ZONES = ["use1-az1", "use1-az2", "use1-az4"]  # moto: us-east-1b, us-east-1c, us-east-1d
TARGET_ID, TARGET_NAME = "use1-az2", "us-east-1c"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def relay(handler, upstream_port, body):
    """Forward the request `handler` is serving to moto and write moto's answer back."""
    conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
    headers = {k: v for k, v in handler.headers.items() if k.lower() != "connection"}
    conn.request(handler.command, handler.path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    handler.send_response(resp.status)
    for k, v in resp.getheaders():
        if k.lower() not in ("transfer-encoding", "connection", "content-length"):
            handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    conn.close()


class Proxy:
    """Forwards to moto, counting requests and adding a fixed latency to each."""

    def __init__(self, upstream_port, latency):
        self.calls = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy.lock:
                    proxy.calls += 1
                if latency:
                    time.sleep(latency)
                relay(self, upstream_port, body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = forward

        self.port = free_port()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self):
        with self.lock:
            n, self.calls = self.calls, 0
        return n


def clients(port, credentials=None):
    """boto3 clients on moto: the default account, or the one `credentials` (AssumeRole's) act in."""
    kw = dict(endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
              aws_access_key_id="testing", aws_secret_access_key="testing")
    if credentials:
        kw.update(aws_access_key_id=credentials["AccessKeyId"], aws_secret_access_key=credentials["SecretAccessKey"],
                  aws_session_token=credentials["SessionToken"])
    return {s: boto3.client(s, **kw) for s in ("ec2", "autoscaling", "ecs", "lambda", "iam")}


def seed(port, n_asg, n_ecs, n_lambda, tag_for_peer, credentials=None):
    c = clients(port, credentials)
    vpc = c["ec2"].create_vpc(CidrBlock="10.90.0.0/16")["Vpc"]["VpcId"]
    subnets = [c["ec2"].create_subnet(VpcId=vpc, CidrBlock=f"10.90.{i * 16}.0/20", AvailabilityZoneId=z)["Subnet"]["SubnetId"]
               for i, z in enumerate(ZONES)]
    sg = c["ec2"].create_security_group(GroupName="bench", Description="bench", VpcId=vpc)["GroupId"]
    if n_asg:
        c["ec2"].create_launch_template(LaunchTemplateName="bench", LaunchTemplateData={"ImageId": "ami-12c6146b"})
    for i in range(n_asg):
        tags = [{"Key": "AZ_FAILURE", "Value": "True", "PropagateAtLaunch": False}] if tag_for_peer else []
        c["autoscaling"].create_auto_scaling_group(
            AutoScalingGroupName=f"asg-{i:04d}", LaunchTemplate={"LaunchTemplateName": "bench"},
            MinSize=0, MaxSize=1, DesiredCapacity=0, VPCZoneIdentifier=",".join(subnets), Tags=tags)
    if n_ecs:
        c["ecs"].create_cluster(clusterName="bench")
        c["ecs"].register_task_definition(family="bench", networkMode="awsvpc",
                                          containerDefinitions=[{"name": "a", "image": "nginx", "memory": 64}])
    for i in range(n_ecs):
        c["ecs"].create_service(cluster="bench", serviceName=f"svc-{i:04d}", taskDefinition="bench", desiredCount=0,
                                launchType="FARGATE", networkConfiguration={"awsvpcConfiguration": {
                                    "subnets": subnets, "securityGroups": [sg], "assignPublicIp": "DISABLED"}})
    if n_lambda:
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        role = c["iam"].create_role(RoleName="bench", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("index.py", "def handler(e, c):\n    return 1\n")
    for i in range(n_lambda):
        c["lambda"].create_function(FunctionName=f"fn-{i:04d}", Runtime="python3.12", Role=role, Handler="index.handler",
                                    Code={"ZipFile": buf.getvalue()}, VpcConfig={"SubnetIds": subnets, "SecurityGroupIds": [sg]})


def start_moto(python, fixed=True):
    """Start a moto server on a free port through scripts/moto_server.py (with its transaction fix, or
    unchanged when fixed is False) and wait until it answers; returns (process, port)."""
    port = free_port()
    env = dict(os.environ, AZEVAC_MOTO_UNFIXED="0" if fixed else "1")
    moto = subprocess.Popen([python, os.path.join(ROOT, "scripts", "moto_server.py"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return moto, port


def reset(port):
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/moto-api/reset", method="POST"))


def run_measured(cmd, env):
    """Run a command; return (seconds, peak RSS in MB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024


def env_for(port):
    env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_REGION="us-east-1",
               AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    env.pop("AWS_PROFILE", None)
    return env


def measure(proxy, runs, evacuate, recover):
    """Alternate evacuate and recover `runs` times; medians, extremes and calls of each."""
    ev, rc, ev_calls, rc_calls, rss = [], [], [], [], []
    for _ in range(runs):
        proxy.take()
        t, m = evacuate()
        ev.append(t); rss.append(m); ev_calls.append(proxy.take())
        t, m = recover()
        rc.append(t); rss.append(m); rc_calls.append(proxy.take())
    return {"evacuate": (statistics.median(ev), min(ev), max(ev)), "recover": (statistics.median(rc), min(rc), max(rc)),
            "evacuate_calls": statistics.median(ev_calls), "recover_calls": statistics.median(rc_calls), "rss_mb": max(rss)}


def bench_azevac(moto_port, proxy, runs, types):
    env = env_for(proxy.port)
    subprocess.run([AZEVAC, "init"], env=env, check=True, stdout=subprocess.DEVNULL)
    evac = lambda: run_measured([AZEVAC, "evacuate", "--az-id", TARGET_ID, "--type", types, "--yes"], env)
    rec = lambda: run_measured([AZEVAC, "recover", "--az-id", TARGET_ID, "--type", types, "--yes"], env)
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
    evac = lambda: run_measured([sys.executable, "-c", code_fail], env)
    rec = lambda: run_measured([sys.executable, "-c", code_recover], env)
    return measure(proxy, runs, evac, rec)


def startup_ms():
    best = min(run_measured([AZEVAC, "--version"], os.environ)[0] for _ in range(20))
    return best * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0, help="latency for the mixed-estate runs")
    parser.add_argument("--skip-peer", action="store_true", help="azevac only (the peer needs ~8 min per round trip at 1,000)")
    parser.add_argument("--emulator", default="fixed,unfixed",
                        help="moto with scripts/moto_server.py's transaction fix, unchanged moto, or both (one server for both tools)")
    args = parser.parse_args()

    rows = []
    for emulator in args.emulator.split(","):
        if emulator not in ("fixed", "unfixed"):
            parser.error(f"--emulator: {emulator!r} is neither fixed nor unfixed")
        rows += bench_emulator(args, emulator)
    print_table(rows)
    print(f"\nazevac --version: {startup_ms():.1f} ms (best of 20)")
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")


def bench_emulator(args, emulator):
    """Every row on one moto server: the fixed or the unchanged emulator."""
    moto, moto_port = start_moto(os.path.join(ROOT, ".venv-bench", "bin", "python"), fixed=emulator == "fixed")
    try:
        rows = []
        for n in [int(s) for s in args.sizes.split(",")]:
            # 1. ASGs only, no added latency: azevac and the peer on the same estate.
            direct = Proxy(moto_port, 0)
            reset(moto_port); seed(moto_port, n, 0, 0, tag_for_peer=True)
            rows.append(("azevac", emulator, "asg", n, 0, bench_azevac(moto_port, direct, args.runs, "asg")))
            if not args.skip_peer:
                reset(moto_port); seed(moto_port, n, 0, 0, tag_for_peer=True)
                rows.append(("peer", emulator, "asg", n, 0, bench_peer(direct, args.runs)))
            # 2. Mixed estate (60% ASG, 20% ECS, 20% Lambda), with control-plane-like latency.
            slow = Proxy(moto_port, args.latency_ms / 1000)
            reset(moto_port); seed(moto_port, n * 6 // 10, n * 2 // 10, n * 2 // 10, tag_for_peer=False)
            rows.append(("azevac", emulator, "mixed", n, args.latency_ms, bench_azevac(moto_port, slow, args.runs, "asg,ecs,lambda")))
        return rows
    finally:
        moto.kill()


def print_table(rows):
    print("| tool | emulator | estate | N | added latency | evacuate median (min-max) s | recover median (min-max) s | API calls evacuate / recover | peak RSS MB | azevac/peer time | azevac/peer calls |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    peers = {(emulator, n): r for tool, emulator, kind, n, lat, r in rows if tool == "peer"}
    for tool, emulator, kind, n, latency, r in rows:
        ratio_t = ratio_c = ""
        if tool == "azevac" and kind == "asg" and (emulator, n) in peers:
            p = peers[(emulator, n)]
            ratio_t = f"{r['evacuate'][0] / p['evacuate'][0]:.2f} / {r['recover'][0] / p['recover'][0]:.2f}"
            ratio_c = f"{r['evacuate_calls'] / p['evacuate_calls']:.2f} / {r['recover_calls'] / p['recover_calls']:.2f}"
        ev, rc = r["evacuate"], r["recover"]
        print(f"| {tool} | {emulator} | {kind} | {n} | {latency:.0f} ms | {ev[0]:.2f} ({ev[1]:.2f}-{ev[2]:.2f}) | {rc[0]:.2f} ({rc[1]:.2f}-{rc[2]:.2f}) "
              f"| {r['evacuate_calls']:.0f} / {r['recover_calls']:.0f} | {r['rss_mb']:.0f} | {ratio_t} | {ratio_c} |")


if __name__ == "__main__":
    main()
