"""Start N replicas of the app and nginx in front of them, on this machine.

Every replica is a ``streamlit run app.py`` on its own loopback port with the same cookie secret; nginx
(Debian's ``nginx``, ``apt-get install -y nginx``) listens on one port and sends each browser to one replica
for good (each new browser goes to the next replica in turn, and a cookie keeps it there: see ``nginx.conf``
beside this file). nginx starts once every replica answers ``/ready`` (its model is loaded), not merely
``/_stcore/health``::

    .venv/bin/python -m deploy.replicas --replicas 2 --port 8600    # then browse to http://127.0.0.1:8600

With ``--base-path attviz`` the app is at ``http://127.0.0.1:8600/attviz/`` (each replica started with
``--server.baseUrlPath attviz``), as behind a proxy that serves it under that path.

It stops everything on Ctrl+C. :func:`replicas_behind_nginx` does the same for a test or a benchmark.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).resolve().parent / "nginx.conf"
START_TIMEOUT_S = 180  # replicas load torch, transformers and the model at the same time on 2 cores


@dataclass
class Deployment:
    """What :func:`replicas_behind_nginx` started.

    Attributes:
        url: nginx's address, e.g. ``http://127.0.0.1:8600``.
        replica_urls: each replica's own address.
        replica_pids: each replica's process id (for its resident memory).
        access_log: nginx's access log, one line per request with the replica that served it.
        logs: each replica's output.
    """

    url: str
    replica_urls: list[str] = field(default_factory=list)
    replica_pids: list[int] = field(default_factory=list)
    access_log: Path | None = None
    logs: list[Path] = field(default_factory=list)

    def served_websockets(self, since: dict[str, int] | None = None) -> dict[str, int]:
        """How many app sessions (WebSocket connections) each replica got, by its ``host:port``; with
        ``since`` (an earlier answer), only those after it (replicas that got none are left out)."""
        counts: dict[str, int] = {}
        if self.access_log is None or not self.access_log.exists():
            return counts
        for line in self.access_log.read_text().splitlines():
            quoted = line.split('"')
            request = quoted[1].split() if len(quoted) > 2 else []  # method, path, protocol
            if request[:1] == ["GET"] and request[1:2] and request[1].endswith("/_stcore/stream"):  # any base path
                upstream = line.split('" ', 1)[1].split()[1]
                counts[upstream] = counts.get(upstream, 0) + 1
        since = since or {}
        return {upstream: n - since.get(upstream, 0) for upstream, n in counts.items() if n > since.get(upstream, 0)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def nginx_config(prefix: Path, listen: str, replicas: list[str], base_path: str = "") -> str:
    """``nginx.conf`` with its placeholders filled: the prefix folder, the listen address, the replicas and
    the base path.

    Args:
        prefix: nginx's folder for its pid file, logs and temporary files.
        listen: ``host:port`` nginx listens on.
        replicas: each replica's ``host:port``; replica ``i`` is named ``r{i}`` in the stickiness cookie.
        base_path: the replicas' ``server.baseUrlPath`` (``attviz``; slashes optional), or ``""`` for none.
    """
    indent = " " * 8
    servers = "\n".join(f"{indent}server {address} max_fails=1 fail_timeout=10s;" for address in replicas)
    by_cookie = "\n".join(f"{indent}r{i}  replica_{i};" for i in range(len(replicas)))
    by_address = "\n".join(f"{indent}{address}  r{i};" for i, address in enumerate(replicas))
    groups = []
    for i, address in enumerate(replicas):
        backups = "".join(f"\n{indent}server {other} backup;" for other in replicas if other != address)
        primary = f"{indent}server {address} max_fails=1 fail_timeout=10s;"
        groups.append(f"    upstream replica_{i} {{\n{primary}{backups}\n    }}")
    values = {
        "prefix": str(prefix),
        "listen": listen,
        "servers": servers,
        "replica_by_cookie": by_cookie,
        "name_by_address": by_address,
        "replica_upstreams": "\n".join(groups),
        "base": f"/{base_path.strip('/')}" if base_path.strip("/") else "",
    }
    text = TEMPLATE.read_text()
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


READY_PATH = "/ready"  # the app's readiness check: 200 once its model is loaded (attention_viz.ui.server.warmup)


def _wait_ready(url: str, process: subprocess.Popen, log: Path, deadline: float) -> None:
    """Wait until ``url`` answers its readiness check: ``/_stcore/health`` answers 8-10 s before a replica
    can draw a map, so nginx would send browsers to a replica still loading its model."""
    while True:
        with contextlib.suppress(OSError):  # a 503 (still loading) raises HTTPError, an OSError
            if urllib.request.urlopen(f"{url}{READY_PATH}", timeout=2).status == 200:
                return
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.25)  # polling interval while waiting for a condition


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def nginx_binary(nginx: str | None = None) -> str:
    """The nginx binary: ``nginx`` if given, else ``nginx`` on the PATH, else ``/usr/sbin/nginx``.

    Raises:
        RuntimeError: none is installed.
    """
    binary = nginx or shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if binary is None:
        raise RuntimeError("nginx is needed: apt-get install -y nginx (as root)")
    return binary


def nginx_prefix() -> Path:
    """A new temporary folder for nginx's ``-p``: its pid file, logs, the folders it buffers in and the files it
    keeps (``assets``)."""
    prefix = Path(tempfile.mkdtemp(prefix="attention-viz-nginx-"))
    for folder in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / folder).mkdir()
        (prefix / folder).chmod(0o777)  # nginx's workers drop root for `nobody` and buffer uploads here
    # What nginx keeps and sends to every browser: writable by its workers alone (as root they run as `nobody`)
    (prefix / "assets").mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(prefix / "assets", pwd.getpwnam("nobody").pw_uid, -1)
    prefix.chmod(0o755)
    return prefix


@contextlib.contextmanager
def replicas_behind_nginx(
    replicas: int = 2, port: int = 0, nginx: str | None = None, base_path: str = ""
) -> Iterator[Deployment]:
    """Start ``replicas`` app servers and nginx in front of them; stop them all afterwards.

    Args:
        replicas: how many identical app servers (each loads the model: about 1.2 GB resident).
        port: nginx's port on 127.0.0.1; 0 picks a free one.
        nginx: the nginx binary (default: ``nginx`` on the PATH, or ``/usr/sbin/nginx``).
        base_path: serve the app under this path (``attviz``: ``http://127.0.0.1:PORT/attviz/``; every
            replica runs with ``--server.baseUrlPath``), or at the root (``""``).

    Yields:
        a :class:`Deployment`, once every replica answers its readiness check (``/ready``: its model is
        loaded) and nginx answers it too. Its ``url`` and ``replica_urls`` end in the base path.

    Raises:
        RuntimeError: nginx is not installed, or a replica or nginx did not start (with its log).
    """
    binary = nginx_binary(nginx)
    prefix = nginx_prefix()
    env = dict(os.environ, HF_HUB_OFFLINE="1", STREAMLIT_SERVER_COOKIE_SECRET=secrets.token_hex(32))
    base = f"/{base_path.strip('/')}" if base_path.strip("/") else ""
    deployment = Deployment(url=f"http://127.0.0.1:{port or free_port()}{base}", access_log=prefix / "access.log")
    processes: list[subprocess.Popen] = []
    try:
        for _ in range(replicas):
            replica_port = free_port()
            log = prefix / f"replica-{replica_port}.log"
            command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(replica_port)]
            command += ["--server.address", "127.0.0.1"] + (["--server.baseUrlPath", base] if base else [])
            with log.open("w") as out:
                processes.append(subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env))
            deployment.replica_urls.append(f"http://127.0.0.1:{replica_port}{base}")
            deployment.replica_pids.append(processes[-1].pid)
            deployment.logs.append(log)
        deadline = time.monotonic() + START_TIMEOUT_S
        for url, process, log in zip(deployment.replica_urls, processes, deployment.logs, strict=True):
            _wait_ready(url, process, log, deadline)
        listen = deployment.url.removeprefix("http://").removesuffix(base)
        upstreams = [url.removeprefix("http://").removesuffix(base) for url in deployment.replica_urls]
        (prefix / "nginx.conf").write_text(nginx_config(prefix, listen, upstreams, base))
        nginx_log = prefix / "nginx.out"
        with nginx_log.open("w") as out:
            command = [binary, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"]
            processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT))
        deployment.logs.append(nginx_log)
        _wait_ready(deployment.url, processes[-1], nginx_log, time.monotonic() + 30)
        yield deployment
    finally:
        for process in reversed(processes):
            _stop(process)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--port", type=int, default=8600)
    parser.add_argument("--base-path", default="", help="serve the app under this path (attviz)")
    args = parser.parse_args(argv)
    with replicas_behind_nginx(args.replicas, args.port, base_path=args.base_path) as deployment:
        print(f"{args.replicas} replicas {' '.join(deployment.replica_urls)} behind {deployment.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return 0


if __name__ == "__main__":
    sys.exit(main())
