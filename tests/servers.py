"""HTTP servers the serve tests run, all on 127.0.0.1: ours in a thread of the test process
(``ours``) or as a command (``command``), and pywb 2.10's own ``wayback`` (``pywb``)."""
import contextlib
import gzip
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import yaml

from webarchive_indexing.api.serve import DEFAULT_LIMITS, make_server

BIN = os.path.dirname(sys.executable)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def ours(collections, limits=DEFAULT_LIMITS, access_log=None):
    """``serve``'s server of ``collections`` (``{name: Collection}``) in a thread; yields
    its base URL."""
    server = make_server(collections, port=0, limits=limits, access_log=access_log)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.stop()
        thread.join()


@contextlib.contextmanager
def command(args, cwd=None, env=None):
    """``webarchive-index serve ARGS --port P``, once it listens: yields (base URL, process)."""
    port = free_port()
    process = subprocess.Popen([os.path.join(BIN, "webarchive-index"), "serve", *args, "--port", str(port)],
                               cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/collinfo.json", process)
        yield f"http://127.0.0.1:{port}", process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(30)
        process.stdout.close()
        process.stderr.close()


@contextlib.contextmanager
def pywb(tmp_path, collections):
    """pywb's ``wayback`` server with ``collections`` (pywb's config: ``{name: index or
    {index:, archive_paths:}}``); yields its base URL."""
    root = tmp_path / "pywb"
    root.mkdir()
    (root / "config.yaml").write_text(yaml.safe_dump({"collections": collections}))
    port = free_port()
    log = open(root / "log.txt", "wb")
    process = subprocess.Popen([os.path.join(BIN, "wayback"), "-p", str(port), "-b", "127.0.0.1"],
                               cwd=root, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/", process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def wait_until_up(url, process, seconds=60):
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before answering {url}")
        try:
            get(url)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def get(address, headers=None, **params):
    """``(status, headers, body)`` of a GET of ``address`` with query ``params``; the body
    un-gzipped if it came gzipped."""
    if params:
        address += ("&" if "?" in address else "?") + urllib.parse.urlencode(params, doseq=True)
    parts = urllib.parse.urlsplit(address)
    conn = http.client.HTTPConnection(parts.netloc, timeout=60)
    try:
        conn.request("GET", parts.path + ("?" + parts.query if parts.query else ""), headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        if response.getheader("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return response.status, dict(response.getheaders()), body
    finally:
        conn.close()


def json_lines(body, drop=("source", "source-coll")):
    return [{k: v for k, v in json.loads(line).items() if k not in drop} for line in body.splitlines() if line]
