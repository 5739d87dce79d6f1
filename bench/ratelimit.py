"""azevac under a control-plane model: latency with a tail, and token-bucket rate limits per service.

A proxy in front of moto (through scripts/moto_server.py) adds a latency drawn per call (log-normal, median
50 ms, capped at 400 ms) and keeps a token bucket per service and action class; a call that finds its bucket
empty is answered with that service's own throttling error (EC2 RequestLimitExceeded, Auto Scaling Throttling,
ECS/DynamoDB ThrottlingException, Lambda TooManyRequestsException) and never reaches moto. It then runs
evacuate and recover of a mixed estate for each retry mode x pacing variant, and reports wall time against the
bound (for each bucket, its accepted calls beyond the burst / its sustained rate; the largest), and the throttled
answers. Calls and throttles are counted per bucket key: SERVICE:Action when that action has a bucket of its own
(lambda:GetFunction), else SERVICE. bench.py's row 4 uses ModelProxy, bound() and matched_pacing() from here.

Usage: .venv-moto/bin/python bench/ratelimit.py [--resources 300] [--binary target/release/azevac]
       [--limit autoscaling=10:20] ...   (SERVICE=RATE:BURST, repeatable; overrides the defaults below)
"""

import argparse
import os
import random
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, SCOPE, TARGET_ID, env_for, relay, reset, run_measured, seed, serve, start_moto  # noqa: E402

# Sustained rate and burst per (service, action class). EC2's non-mutating bucket (20/s, 100) and Lambda's
# control-plane quota (15/s; GetFunction has its own 100/s) are published; Auto Scaling, ECS and DynamoDB
# publish none, so these are settings of the model, printed with the results.
DEFAULT_LIMITS = {
    "ec2": (20.0, 100),
    "lambda": (15.0, 15),
    "lambda:GetFunction": (100.0, 100),
    "autoscaling": (10.0, 20),
    "ecs": (10.0, 20),
}
# azevac's own default pacing (--max-rate help: ec2=20 burst 100, lambda=15): the services it already paces.
AZEVAC_DEFAULT_RATES = {"ec2": 20.0, "lambda": 15.0}


def parse_limits(specs):
    """DEFAULT_LIMITS with the --limit SERVICE[:Action]=RATE:BURST overrides applied."""
    limits = dict(DEFAULT_LIMITS)
    for spec in specs:
        key, value = spec.split("=", 1)
        rate, burst = value.split(":")
        limits[key] = (float(rate), int(burst))
    return limits


def matched_pacing(limits):
    """AZEVAC_MAX_RATE that matches azevac's pacing to the model: each service bucket whose rate azevac's
    defaults do not already give (with the defaults, autoscaling=10,ecs=10). azevac paces per service only, so
    an action's own bucket (lambda:GetFunction) has no pacing of its own."""
    return ",".join(f"{key}={rate:g}" for key, (rate, _) in sorted(limits.items())
                    if ":" not in key and AZEVAC_DEFAULT_RATES.get(key) != rate)


def describe(limits):
    return (", ".join(f"{k} {r:g}/s burst {b}" for k, (r, b) in sorted(limits.items()))
            + "; latency log-normal, median 50 ms, capped at 400 ms")


def throttle_answer(service):
    """(status, headers, body) of the service's own throttling error."""
    if service == "ec2":
        return 503, {"Content-Type": "text/xml"}, (
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Errors><Error><Code>RequestLimitExceeded</Code>"
            "<Message>Request limit exceeded.</Message></Error></Errors><RequestID>bench</RequestID></Response>")
    if service in ("autoscaling", "rds", "sts", "elasticloadbalancing"):
        return 400, {"Content-Type": "text/xml"}, (
            "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message>"
            "</Error><RequestId>bench</RequestId></ErrorResponse>")
    if service == "lambda":
        return 429, {"Content-Type": "application/json", "x-amzn-ErrorType": "TooManyRequestsException"}, (
            '{"Type":"User","message":"Rate exceeded","Reason":"CallerRateLimitExceeded"}')
    if service == "dynamodb":
        return 400, {"Content-Type": "application/x-amz-json-1.0"}, (
            '{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}')
    return 400, {"Content-Type": "application/x-amz-json-1.1"}, '{"__type":"ThrottlingException","message":"Rate exceeded"}'


class Bucket:
    def __init__(self, rate, burst):
        self.rate, self.burst, self.tokens, self.at = rate, burst, float(burst), time.monotonic()

    def take(self):
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


def action_of(headers, path, body, method="GET"):
    """The API action of a request: X-Amz-Target (JSON protocols), Action= (query protocols), or for Lambda's
    REST paths only GetFunction (GET /2015-03-31/functions/NAME; a DELETE there is DeleteFunction), the one
    action with a bucket of its own; anything else is "other"."""
    target = headers.get("X-Amz-Target")
    if target:
        return target.rsplit(".", 1)[-1]
    m = re.search(r"(?:^|&)Action=([A-Za-z]+)", body.decode(errors="replace"))
    if m:
        return m.group(1)
    if method == "GET" and "/functions/" in path and path.split("?")[0].rstrip("/").count("/") == 3:
        return "GetFunction"
    return "other"


class ModelProxy:
    """The control-plane model in front of moto; counts calls and throttled answers per bucket key, the unit
    the bound is computed in (a per-service count would charge GetFunction to Lambda's 15/s)."""

    def __init__(self, upstream, limits, seed_value=7):
        self.lock = threading.Lock()
        self.buckets = {k: Bucket(*v) for k, v in limits.items()}
        self.calls, self.throttled = {}, {}
        self.rng = random.Random(seed_value)
        proxy = self

        def forward(handler, body):
            body = body or b""
            m = SCOPE.search(handler.headers.get("Authorization", ""))
            service = m.group(1) if m else "unsigned"
            action = action_of(handler.headers, handler.path, body, handler.command)
            key = f"{service}:{action}" if f"{service}:{action}" in proxy.buckets else service
            with proxy.lock:
                proxy.calls[key] = proxy.calls.get(key, 0) + 1
                bucket = proxy.buckets.get(key)
                allowed = bucket.take() if bucket else True
                if not allowed:
                    proxy.throttled[key] = proxy.throttled.get(key, 0) + 1
                latency = min(0.4, proxy.rng.lognormvariate(-3.0, 0.6))  # median e^-3 = 50 ms
            time.sleep(latency)
            if not allowed:
                status, headers, text = throttle_answer(service)
                data = text.encode()
                handler.send_response(status)
                for k, v in headers.items():
                    handler.send_header(k, v)
                handler.send_header("Content-Length", str(len(data)))
                handler.end_headers()
                handler.wfile.write(data)
                return
            relay(handler, upstream, body or None)

        self.server, self.port = serve(forward)

    def take(self):
        with self.lock:
            calls, throttled = self.calls, self.throttled
            self.calls, self.throttled = {}, {}
        return calls, throttled


def bound(calls, throttled, limits):
    """The least wall time the accepted calls could take at the model's sustained rates: the slowest bucket
    (calls and throttled are per bucket key, as ModelProxy counts them; a throttled answer takes no token, the
    burst is free). Returns (seconds, the bucket key that sets it, or None)."""
    worst, which = 0.0, None
    for key, n in calls.items():
        if key in limits:
            rate, burst = limits[key]
            t = max(0, n - throttled.get(key, 0) - burst) / rate
            if t > worst:
                worst, which = t, key
    return worst, which


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=300, help="60%% ASG, 20%% ECS, 20%% Lambda")
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "azevac"))
    parser.add_argument("--limit", action="append", default=[], help="SERVICE[:Action]=RATE:BURST")
    args = parser.parse_args()
    limits = parse_limits(args.limit)
    # azevac's own pacing matched to the model where it has no default (Auto Scaling, ECS publish none).
    matched = [r for r in matched_pacing(limits).split(",") if r]
    variants = [
        ("standard", "defaults (ec2, lambda)", []),
        ("standard", "matched to the model", matched),
        ("adaptive", "defaults (ec2, lambda)", []),
        ("adaptive", "matched to the model", matched),
        ("standard", "off", ["ec2=unlimited", "lambda=unlimited"]),
        ("adaptive", "off", ["ec2=unlimited", "lambda=unlimited"]),
    ]
    n = args.resources
    moto, moto_port = start_moto(os.path.join(ROOT, ".venv-moto", "bin", "python"))
    try:
        proxy = ModelProxy(moto_port, limits)
        print("model:", describe(limits))
        print(f"| retry mode | azevac pacing | command | wall s | bound s | wall / bound | calls | throttled | throttled % |")
        print("|---|---|---|---|---|---|---|---|---|")
        for mode, pacing_name, rates in variants:
            reset(moto_port)
            seed(moto_port, n * 6 // 10, n * 2 // 10, n * 2 // 10, tag_for_peer=False)
            env = dict(env_for(proxy.port), AWS_RETRY_MODE=mode, AWS_MAX_ATTEMPTS="8")
            if rates:
                env["AZEVAC_MAX_RATE"] = ",".join(rates)
            run_measured([args.binary, "init"], env)
            for command in ("evacuate", "recover"):
                proxy.take()
                wall, _ = run_measured([args.binary, command, "--az-id", TARGET_ID, "--type", "asg,ecs,lambda", "--yes"], env)
                calls, throttled = proxy.take()
                total, thr = sum(calls.values()), sum(throttled.values())
                b, _ = bound(calls, throttled, limits)
                print(f"| {mode} | {pacing_name} | {command} | {wall:.1f} | {b:.1f} | {wall / b if b else float('nan'):.2f} "
                      f"| {total} | {thr} | {100 * thr / max(total, 1):.1f} |", flush=True)
    finally:
        moto.kill()


if __name__ == "__main__":
    main()
