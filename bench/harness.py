"""What every benchmark script here shares: the emulator (moto servers through scripts/moto_server.py), the
counting proxy in front of it, the seeded estate, and running the binary under measurement.

bench.py (the performance table), ratelimit.py (the control-plane model), accounts.py, calls.py and moto_fix.py
all import from here and from nowhere else among themselves but bench.py -> ratelimit.py, so no two scripts
import each other.
"""

import concurrent.futures
import http.client
import http.server
import io
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile

import boto3
from botocore.config import Config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# AZEVAC_BIN: another build (the debug one, say) for a quick run; bench/run builds the release one.
AZEVAC = os.environ.get("AZEVAC_BIN") or os.path.join(ROOT, "target", "release", "azevac")
ZONES = ["use1-az1", "use1-az2", "use1-az4"]  # moto: us-east-1b, us-east-1c, us-east-1d
TARGET_ID, TARGET_NAME = "use1-az2", "us-east-1c"
SEED_WORKERS = 8  # threads seeding moto (moto server is threaded; the client side is half the work)
STARTED = time.perf_counter()


def log(message):
    """A progress line on stderr, with the seconds since the start, so a long run shows where it is."""
    print(f"[{time.perf_counter() - STARTED:7.1f} s] {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Upstream:
    """Where the benchmark's proxies send a request: DynamoDB's (the journal) to a moto server of its own,
    everything else to the main one. On AWS every service is its own endpoint with its own capacity; one moto
    process serves all of them on one core behind one interpreter lock, so a journal transaction there waits
    for Auto Scaling's XML and the other way round, which AWS never does. moto keeps no state across services
    that DynamoDB takes part in (Auto Scaling and ECS read EC2's subnets in process, so those stay together),
    so each server answers exactly as the single one would. The service is read from the request's SigV4
    scope, as moto's own dispatcher reads it."""

    def __init__(self, port, dynamodb_port=None):
        self.port = port
        self.dynamodb_port = dynamodb_port or port

    def port_for(self, headers):
        m = SCOPE.search(headers.get("Authorization", ""))
        return self.dynamodb_port if m and m.group(1) == "dynamodb" else self.port


SCOPE = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/aws4_request")


def relay(handler, upstream, body, extra_headers=None, before_answer=None):
    """Forward the request `handler` is serving to moto (an Upstream, or a port), with `extra_headers` set,
    and write moto's answer back, after before_answer(body of the answer) when given. One connection per
    request: moto's server (werkzeug) closes every connection after its answer."""
    port = upstream.port_for(handler.headers) if isinstance(upstream, Upstream) else upstream
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {k: v for k, v in handler.headers.items() if k.lower() != "connection"}
    headers.update(extra_headers or {})
    conn.request(handler.command, handler.path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    if before_answer:
        before_answer(data)
    handler.send_response(resp.status)
    for k, v in resp.getheaders():
        if k.lower() not in ("transfer-encoding", "connection", "content-length"):
            handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    conn.close()


def serve(forward):
    """A threaded HTTP server on a free port that hands every request, with its body read (None when empty),
    to forward(handler, body); returns (server, port). Each proxy of the benchmarks is one."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            forward(self, self.rfile.read(length) if length else None)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, port


class Proxy:
    """Forwards to moto, counting requests and adding a fixed latency to each; also the most requests in
    flight at once, which says whether a tool far from the latency bound runs its calls side by side."""

    def __init__(self, upstream, latency, moto_pids=()):
        self.calls = 0
        self.moto_pids = moto_pids  # whose CPU measure() reports
        self.in_flight = self.peak = 0
        self.lock = threading.Lock()
        proxy = self

        def forward(handler, body):
            with proxy.lock:
                proxy.calls += 1
                proxy.in_flight += 1
                proxy.peak = max(proxy.peak, proxy.in_flight)
            try:
                if latency:
                    time.sleep(latency)
                relay(handler, upstream, body)
            finally:
                with proxy.lock:
                    proxy.in_flight -= 1

        self.server, self.port = serve(forward)

    def take(self):
        with self.lock:
            n, self.calls = self.calls, 0
        return n

    def take_peak(self):
        """The most requests in flight since the last take_peak()."""
        with self.lock:
            peak, self.peak = self.peak, self.in_flight
        return peak


def clients(port, credentials=None, pool=10):
    """boto3 clients on moto: the default account, or the one `credentials` (AssumeRole's) act in; `pool`
    connections each, so that a thread pool sharing a client does not queue on its connections."""
    kw = dict(endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
              aws_access_key_id="testing", aws_secret_access_key="testing",
              config=Config(max_pool_connections=max(10, pool), retries={"mode": "standard", "max_attempts": 5}))
    if credentials:
        kw.update(aws_access_key_id=credentials["AccessKeyId"], aws_secret_access_key=credentials["SecretAccessKey"],
                  aws_session_token=credentials["SessionToken"])
    return {s: boto3.client(s, **kw) for s in ("ec2", "autoscaling", "ecs", "lambda", "iam")}


def in_parallel(workers, function, count):
    """Call function(i) for i in range(count) on `workers` threads (seeding 5,000 resources one by one takes
    minutes); re-raises the first error."""
    if workers <= 1:
        for i in range(count):
            function(i)
        return
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(function, i) for i in range(count)]:
            future.result()


def seed(port, n_asg, n_ecs, n_lambda, tag_for_peer, credentials=None, workers=SEED_WORKERS):
    """Seed the estate: one VPC with a subnet in each of ZONES, n_asg groups, n_ecs Fargate services and
    n_lambda VPC functions over all three subnets; the peer needs its AZ_FAILURE tag on the groups."""
    started = time.perf_counter()
    c = clients(port, credentials, pool=workers)
    vpc = c["ec2"].create_vpc(CidrBlock="10.90.0.0/16")["Vpc"]["VpcId"]
    subnets = [c["ec2"].create_subnet(VpcId=vpc, CidrBlock=f"10.90.{i * 16}.0/20", AvailabilityZoneId=z)["Subnet"]["SubnetId"]
               for i, z in enumerate(ZONES)]
    sg = c["ec2"].create_security_group(GroupName="bench", Description="bench", VpcId=vpc)["GroupId"]
    if n_asg:
        c["ec2"].create_launch_template(LaunchTemplateName="bench", LaunchTemplateData={"ImageId": "ami-12c6146b"})
    tags = [{"Key": "AZ_FAILURE", "Value": "True", "PropagateAtLaunch": False}] if tag_for_peer else []
    in_parallel(workers, lambda i: c["autoscaling"].create_auto_scaling_group(
        AutoScalingGroupName=f"asg-{i:04d}", LaunchTemplate={"LaunchTemplateName": "bench"},
        MinSize=0, MaxSize=1, DesiredCapacity=0, VPCZoneIdentifier=",".join(subnets), Tags=tags), n_asg)
    if n_ecs:
        c["ecs"].create_cluster(clusterName="bench")
        c["ecs"].register_task_definition(family="bench", networkMode="awsvpc",
                                          containerDefinitions=[{"name": "a", "image": "nginx", "memory": 64}])
    in_parallel(workers, lambda i: c["ecs"].create_service(
        cluster="bench", serviceName=f"svc-{i:04d}", taskDefinition="bench", desiredCount=0, launchType="FARGATE",
        networkConfiguration={"awsvpcConfiguration": {"subnets": subnets, "securityGroups": [sg],
                                                      "assignPublicIp": "DISABLED"}}), n_ecs)
    if n_lambda:
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        role = c["iam"].create_role(RoleName="bench", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("index.py", "def handler(e, c):\n    return 1\n")
        code = buf.getvalue()
    in_parallel(workers, lambda i: c["lambda"].create_function(
        FunctionName=f"fn-{i:04d}", Runtime="python3.12", Role=role, Handler="index.handler", Code={"ZipFile": code},
        VpcConfig={"SubnetIds": subnets, "SecurityGroupIds": [sg]}), n_lambda)
    log(f"seeded {n_asg} ASG + {n_ecs} ECS + {n_lambda} Lambda in {time.perf_counter() - started:.1f} s")


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


def run_captured(cmd, env):
    """Run a command with stdout and stderr in files (a pipe nobody reads until the end fills up and hangs a
    chatty child); return seconds, peak RSS in MB, exit code, stdout and stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; stops Popen's own wait
        elapsed = time.perf_counter() - start
        out.seek(0); err.seek(0)
        return {"seconds": elapsed, "rss_mb": usage.ru_maxrss / 1024, "code": proc.returncode,
                "cpu": usage.ru_utime + usage.ru_stime,
                "stdout": out.read().decode(errors="replace"), "stderr": err.read().decode(errors="replace")}


def run_peak(cmd, env):
    """Run a command with stdout and stderr in files; return seconds, its peak resident memory in MB (VmHWM,
    read every 10 ms while it runs: the rusage of a child started by vfork counts the parent's memory too),
    its CPU seconds, exit code, stdout and stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        peak_kb = 0
        while proc.poll() is None:
            try:
                with open(f"/proc/{proc.pid}/status") as status:
                    for line in status:
                        if line.startswith("VmHWM:"):
                            peak_kb = max(peak_kb, int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        elapsed = time.perf_counter() - start
        cpu = os.times()
        out.seek(0); err.seek(0)
        return {"seconds": elapsed, "rss_mb": peak_kb / 1024, "code": proc.returncode,
                "cpu": cpu.children_user + cpu.children_system,
                "stdout": out.read().decode(errors="replace"), "stderr": err.read().decode(errors="replace")}


def run_measured(cmd, env):
    """Run a command that must succeed; return (seconds, peak RSS in MB)."""
    r = run_captured(cmd, env)
    if r["code"] != 0:
        sys.exit(f"{' '.join(cmd)} exited {r['code']}: {r['stderr'][-2000:]}")
    return r["seconds"], r["rss_mb"]


def env_for(port):
    env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_REGION="us-east-1",
               AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    env.pop("AWS_PROFILE", None)
    return env


def moto_python():
    return os.path.join(ROOT, ".venv-bench", "bin", "python")


class Moto:
    """The moto servers of one row, killed when the row ends (a row never sees another row's state): the main
    one, which the estate is seeded on, and DynamoDB's own (see Upstream)."""

    def __init__(self, fixed=True):
        self.fixed = fixed

    def __enter__(self):
        self.process, self.port = start_moto(moto_python(), fixed=self.fixed)
        self.dynamodb, self.dynamodb_port = start_moto(moto_python(), fixed=self.fixed)
        self.upstream = Upstream(self.port, self.dynamodb_port)
        self.pids = (self.process.pid, self.dynamodb.pid)
        return self

    def reset(self):
        reset(self.port)
        reset(self.dynamodb_port)

    def __exit__(self, *exc):
        for process in (self.process, self.dynamodb):
            process.kill()
            process.wait()
