"""Fresh moto servers for the tests, forked from one process that has already paid moto's start-up.

Every integration test starts a moto server of its own, so that no test sees another's estate. A moto server
started from nothing spends about 2 CPU-seconds before it has answered one call of each service the tests use
(0.5 s to import and listen, 1.5 s on the first call of each service: importing that service's models and
building its backend), against ~0.3 s for a reset one. At a hundred-odd servers per test run on 2 cores that
is minutes of CI. This process starts moto once (scripts/moto_server.py's fixes applied), serves one call of
each of those services on a private port, resets it, and then forks a new server for every test that asks:
the child begins with everything imported and no state, exactly as a reset server; it binds the port it was
given and serves as `moto_server -H HOST -p PORT` does (the same app, handler and threading).

Protocol, one Unix-socket connection per server: the test writes `serve HOST PORT\n`, reads back
`PID\n` (or `error ...\n`), and keeps the connection open for as long as it uses the server. When the
connection closes, however the test ended (its handle dropped, a panic, SIGKILL), the server is killed.
Servers also die with this process (PR_SET_PDEATHSIG), so scripts/test stopping it leaves nothing behind.

Run with the emulator's Python: .venv-moto/bin/python scripts/moto_pool.py SOCKET_PATH
tests/it/common/moto.rs uses it when AZEVAC_MOTO_POOL names the socket (scripts/test sets it).
"""

import ctypes
import os
import random
import selectors
import signal
import socket
import sys
import threading
import time

import moto_server
from moto.moto_api._internal import mock_random
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server, run_simple

PR_SET_PDEATHSIG = 1

# One cheap call of each service the tests and the demo call; a service left out here still works, its
# first call in each server only costs what it costs on a server started from nothing. The table is state
# that the reset must remove: tests/it/docs/emulator.rs checks that no forked server has it.
WARM_UP = [
    ("ec2", "describe_subnets", {}),
    ("autoscaling", "describe_auto_scaling_groups", {}),
    ("ecs", "list_clusters", {}),
    ("lambda", "list_functions", {}),
    ("dynamodb", "create_table", {"TableName": "moto-pool-warm-up", "BillingMode": "PAY_PER_REQUEST",
                                  "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
                                  "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}]}),
    ("sts", "get_caller_identity", {}),
    ("iam", "list_roles", {}),
    ("rds", "describe_db_clusters", {}),
    ("elasticache", "describe_replication_groups", {}),
    ("elbv2", "describe_load_balancers", {}),
    ("sns", "list_topics", {}),
    ("sqs", "list_queues", {}),
    ("organizations", "list_roots", {}),
    ("batch", "describe_compute_environments", {}),
    ("cloudwatch", "describe_alarms", {}),
]


def new_app():
    """The WSGI app `moto_server` serves (moto.server.main builds the same)."""
    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True
    return app


def warm(app):
    """Serve one call of each WARM_UP service on a private port, then reset every backend: what is left is
    moto's imports and per-service apps, and no state. The server thread is stopped and joined before
    anything is forked (a fork copies only the thread that called it)."""
    import logging

    import boto3
    from botocore.config import Config

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per warm-up request says nothing

    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    config = Config(retries={"max_attempts": 1})
    for service, operation, args in WARM_UP:
        client = boto3.client(service, endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                              aws_secret_access_key="testing", config=config)
        try:
            getattr(client, operation)(**args)
        except client.exceptions.ClientError:
            pass  # an error answer (no organization, say) has warmed the service all the same
        client.close()
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).read()
    server.shutdown()
    serving.join()
    server.server_close()
    logging.getLogger("werkzeug").setLevel(logging.NOTSET)
    # The handler threads of the warm-up's connections end once their clients have closed them.
    deadline = time.monotonic() + 10
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.01)


def serve_child(app, host, port, inherited):
    """In the forked child: close the pool's sockets (the listener and every test's connection, its own
    included), draw new random identifiers, die with the pool, and serve as moto_server does. Never returns."""
    try:
        for fileobj in inherited:
            fileobj.close()
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the pool died before prctl took effect
            os._exit(0)
        # Every child would otherwise draw the same "random" IDs the pool would have drawn next (CPython
        # reseeds `random` after a fork, but not moto's own generator, which EC2's IDs come from).
        random.seed()
        mock_random.seed()
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        signal.signal(signal.SIGINT, lambda *_: os._exit(0))
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.environ["MOTO_PORT"] = str(port)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        run_simple(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    finally:
        os._exit(0)


class Held:
    """One test's connection: what it has sent so far, and the server it holds once it has one. The server is
    known by a pidfd, so that a signal never reaches another process that took its pid after it exited."""

    def __init__(self):
        self.received = b""
        self.pidfd = None

    def kill(self):
        if self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it had exited already
            os.close(self.pidfd)
            self.pidfd = None


def serve_connection(app, selector, sock, held):
    """Read what a test sent; once it has sent `serve HOST PORT\n`, fork its server and answer its pid. Returns
    False when the connection is done with: closed by the test (its server goes), or malformed."""
    data = sock.recv(4096)
    if not data or held.pidfd is not None:
        return False  # the test let go of its server (or sent more than it should)
    held.received += data
    if b"\n" not in held.received:
        return len(held.received) < 4096
    words = held.received.decode(errors="replace").split()
    if len(words) != 3 or words[0] != "serve" or not words[2].isdigit():
        sock.sendall(b"error: expected 'serve HOST PORT'\n")
        return False
    inherited = [key.fileobj for key in selector.get_map().values()] + [selector]
    pid = os.fork()
    if pid == 0:
        serve_child(app, words[1], int(words[2]), inherited)
    held.pidfd = os.pidfd_open(pid)
    sock.sendall(f"{pid}\n".encode())
    return True


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: moto_pool.py SOCKET_PATH")
    path = sys.argv[1]
    if os.environ.get("AZEVAC_MOTO_UNFIXED") != "1":
        moto_server.apply_fix()
    app = new_app()
    warm(app)
    if threading.active_count() > 1:
        # A thread that held a lock (the dispatcher's, say) at the fork would leave it held in every child.
        sys.exit(f"moto_pool: {threading.active_count() - 1} warm-up threads still running; not forking")

    # Bound and listening under another name first: the socket's path appearing means it is ready.
    pending = f"{path}.{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(pending)
    listener.listen(128)
    os.replace(pending, path)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    stop = []

    def terminate(*_):
        stop.append(True)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    print(f"moto_pool: ready on {path}", file=sys.stderr, flush=True)
    try:
        while not stop:
            for key, _ in selector.select(timeout=0.5):
                sock = key.fileobj
                if sock is listener:
                    conn, _ = listener.accept()
                    selector.register(conn, selectors.EVENT_READ, Held())
                    continue
                held = key.data
                try:
                    keep = serve_connection(app, selector, sock, held)
                except OSError as error:
                    # One test's connection failing (it went away before its answer) is that test's alone.
                    print(f"moto_pool: a connection failed: {error}", file=sys.stderr, flush=True)
                    keep = False
                if not keep:
                    held.kill()
                    selector.unregister(sock)
                    sock.close()
    finally:
        for key in list(selector.get_map().values()):
            if key.data is not None:
                key.data.kill()
        listener.close()
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    main()
