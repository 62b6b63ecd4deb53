"""``serve`` under what a long-running server meets: rebuilds and updates published while it
answers (locally, over HTTP and on S3), slow and idle clients, requests with control
bytes, clusters that cannot be read or point elsewhere; and the one rule of where a
cluster's shards may be read (query, copy check, serve, export)."""
import contextlib
import json
import logging
import os
import resource
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

import rangeserver
import s3server
import servers
from webarchive_indexing import cli
from webarchive_indexing.api.request import CdxRequest
from webarchive_indexing.api.collection import Collection, Reloading, query
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.zipnum.reader import Cluster, open_cluster
from webarchive_indexing.api.serve import Bounds, make_server, open_collections, printable

from test_serve import LogCapture


@pytest.fixture(scope="module")
def crawls(tmp_path_factory):
    """Three crawls of one archive each, of the same few sites: each update adds captures
    of sites already there."""
    root = tmp_path_factory.mktemp("crawls")
    for seed in (1, 2, 3):
        make_corpus(root / f"crawl-{seed}", files=1, captures=30, seed=seed, hosts=3)
    return root


@pytest.fixture(scope="module")
def s3():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with s3server.running() as endpoint:
        yield endpoint


def build(inputs, out, *extra):
    assert cli.main(["build", *map(str, inputs), "-o", str(out), "--no-progress", *extra]) == cli.EXIT_OK


def every_line(location):
    return list(open_cluster(location).lookup_range(b"", b"~"))


def tlds(lines):
    return sorted({line.split(b",", 1)[0].decode() for line in lines})


def truth(location, tld):
    """What ``query`` answers now, the cluster opened afresh."""
    return b"".join(query(location, CdxRequest(tld, match_type="domain", output="json")))


def served(base, tld):
    status, _, body = servers.get(base + "/c/cdx", url=tld, matchType="domain", output="json")
    assert status == 200, body
    return body


def assert_serves_what_query_reads(base, location, rounds=6):
    """Every answer, from whichever worker takes it, is what a fresh ``query`` reads."""
    lines = every_line(location)
    for _ in range(rounds):
        for tld in tlds(lines):
            assert served(base, tld) == truth(location, tld), tld
    return lines


@pytest.mark.parametrize("where", ["local", "http", "s3"])
def test_serve_follows_builds_and_updates(where, crawls, tmp_path, request):
    """Two workers follow a rebuild and two updates of the cluster they serve, each answer
    that of the build published last; a worker that looks at a remote cluster seldom (an
    hour) still answers after the build it read was removed (the request retried on the
    new one), not with a 502."""
    if where == "s3":
        request.getfixturevalue("s3")
        out = s3server.new_bucket() + "/out"
    else:
        out = tmp_path / "site" / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")
    with rangeserver.serving(tmp_path / "site") if where == "http" else contextlib.nullcontext() as remote:
        location = f"{remote.url}/out" if where == "http" else str(out)
        common = [f"c={location}", "--workers", "2", "--no-log"]
        # the stale one opens the first build (and reads nothing of it yet)
        with servers.command([*common, "--reload-seconds", "0"]) as (base, _), \
                servers.command([*common, "--reload-seconds", "3600"]) as (stale, _):
            before = assert_serves_what_query_reads(base, location, rounds=2)
            build([crawls / "crawl-2"], out, "--update")
            updated = assert_serves_what_query_reads(base, location)
            assert len(updated) > len(before)
            build([crawls / "crawl-1"], out, "--shards", "3", "--lines-per-block", "3")  # a rebuild
            rebuilt = assert_serves_what_query_reads(base, location)
            assert rebuilt == before
            build([crawls / "crawl-3"], out, "--update")  # removes the build the stale one read
            assert len(assert_serves_what_query_reads(base, location)) > len(rebuilt)
            # what the stale one read is gone: its requests are answered again from the
            # new build (those its old index has nothing for stay unanswered till it looks)
            for tld in tlds(before):
                assert served(stale, tld) == truth(location, tld), tld


def test_a_remote_rebuild_of_the_same_size_is_noticed(crawls, tmp_path):
    """Rebuilds of the same inputs publish an index of the same size (only its build
    number differs): a worker still tells it from the one it read, and answers once the
    build it read is gone."""
    site = tmp_path / "site"
    build([crawls / "crawl-1"], site / "out", "--shards", "2", "--lines-per-block", "4")
    idx = site / "out" / "cluster" / "cluster.idx"
    size = idx.stat().st_size
    first, *others = tlds(every_line(site / "out"))
    with rangeserver.serving(site) as remote:
        location = f"{remote.url}/out"
        with servers.command([f"c={location}", "--workers", "1", "--no-log",
                              "--reload-seconds", "3600"]) as (stale, _):
            assert served(stale, first) == truth(location, first)
            for _ in range(2):  # the second removes the build the worker read
                build([crawls / "crawl-1"], site / "out", "--shards", "2", "--lines-per-block", "4")
            assert idx.stat().st_size == size and b"build-00003/" in idx.read_bytes()
            for tld in others:
                assert served(stale, tld) == truth(location, tld)


def _children(pid):
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as fh:
                if entry.isdigit() and int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_workers_started_again_start_from_the_newest_build(crawls, tmp_path):
    """Workers that died are replaced by ones opened on the build published last: the
    server lets go of the index it opened first (a replaced cluster.idx, deleted, would
    otherwise stay on the disk while the server runs)."""
    out = tmp_path / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")

    def replaced_indexes(pid):
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        return [link for link in links if link.endswith("cluster.idx (deleted)")]

    with servers.command([f"c={out}", "--workers", "2", "--no-log"]) as (base, process):
        build([crawls / "crawl-2"], out, "--update")
        assert replaced_indexes(process.pid)  # opened before the update
        workers = _children(process.pid)
        assert len(workers) == 2
        for worker in workers:
            os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while len(set(_children(process.pid)) - set(workers)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert replaced_indexes(process.pid) == []
        for worker in _children(process.pid):
            assert replaced_indexes(worker) == []
        for tld in tlds(every_line(out)):
            assert served(base, tld) == truth(str(out), tld), tld


def test_a_request_reads_one_build_whole(crawls, tmp_path):
    """A request that began before an update was published reads on in the build it
    began in, and the next one reads the new build: never lines of two builds. The index
    is large enough to be read in pieces (root slices), as a real one is."""
    out = tmp_path / "out"
    big = tmp_path / "big"
    make_corpus(big / "a", files=1, captures=900, seed=7, hosts=40, mean_kb=1)
    make_corpus(big / "b", files=1, captures=900, seed=8, hosts=40, mean_kb=1)
    make_corpus(big / "c", files=1, captures=9, seed=9, hosts=4, mean_kb=1)
    build([big / "a"], out, "--shards", "3", "--lines-per-block", "1")
    old = every_line(out)
    assert os.path.getsize(out / "cluster" / "cluster.idx") > 64 * 1024
    live = Reloading("c", [str(out)])
    snapshot = live.current()
    lines = snapshot.lines(b"", b"~")
    head = [next(lines).line for _ in range(10)]
    build([big / "b"], out, "--update")
    # the build it began in is kept while it is the one replaced: read whole, alone
    assert head + [capture.line for capture in lines] == old
    newer = live.current()
    assert newer is not snapshot
    assert [c.line for c in newer.lines(b"", b"~")] == every_line(out) != old
    # the build after next removes its shards: an error, never another build's lines
    build([big / "c"], out, "--update")
    read = []
    with pytest.raises(OSError, match="cannot read build-00001/"):
        for capture in snapshot.lines(b"", b"~"):
            read.append(capture.line)
    assert read == old[:len(read)]


def test_an_index_that_cannot_be_opened_leaves_the_one_served(crawls, tmp_path, caplog):
    """A cluster.idx replaced by something that is not one: the build opened before is
    answered from (a warning, once), until a good one is published."""
    out = tmp_path / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")
    old = every_line(out)
    live = Reloading("c", [str(out)])
    bad = tmp_path / "bad.idx"
    bad.write_bytes(b"not an index\n")
    os.replace(bad, out / "cluster" / "cluster.idx")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert [c.line for c in live.current().lines(b"", b"~")] == old
    assert caplog.text.count("cannot open the new index of collection c") == 1
    build([crawls / "crawl-2"], out, "--shards", "2", "--lines-per-block", "4")
    assert [c.line for c in live.current().lines(b"", b"~")] == every_line(out) != old


def test_serve_retries_a_request_whose_build_went(crawls, tmp_path):
    """A request answered from a build whose shards were removed since (two updates) is
    answered again from the new build, not 502."""
    out = tmp_path / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")
    live = Reloading("c", [str(out)])
    stale = live.current()
    before = every_line(out)

    class Frozen:
        """The collection as a worker held it when the builds came."""
        def current(self, recheck=False):
            return live.current(recheck) if recheck else stale

    build([crawls / "crawl-2"], out, "--update")
    build([crawls / "crawl-3"], out, "--update")
    with servers.ours({"c": Frozen()}) as base:
        for tld in tlds(before):
            assert served(base, tld) == truth(str(out), tld) != b""


# -- slow clients --------------------------------------------------------------------------

def _slow_sockets(port, count):
    """``count`` connections that sent part of a request's headers."""
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"GET /c/cdx?url=x HTTP/1.1\r\nHost: x\r\n")
        sockets.append(sock)
    return sockets


def _closed_by_server(sock, seconds):
    sock.settimeout(seconds)
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_slow_clients_do_not_starve_serve(crawls, tmp_path):
    """Far more slow connections than a worker may hold (its open files limited to 128,
    as a 1024 limit is to the thousands of the report), two workers: every probe is
    answered, and the slow ones are closed after the header timeout."""
    out = tmp_path / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")
    port = servers.free_port()

    def limit_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    process = subprocess.Popen(
        [os.path.join(servers.BIN, "webarchive-index"), "serve", f"c={out}", "--workers", "2",
         "--port", str(port), "--header-timeout", "2", "--idle-timeout", "2", "--no-log"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limit_files)
    slow = []
    try:
        servers.wait_until_up(f"http://127.0.0.1:{port}/collinfo.json", process)
        slow = _slow_sockets(port, 400)
        answered = 0
        for _ in range(5):
            status, _, _ = servers.get(f"http://127.0.0.1:{port}/c/cdx", url="*.com", limit="1")
            answered += status == 200
        assert answered == 5
        # the slow ones that kept their connection are closed once their time is up
        deadline = time.monotonic() + 8
        assert all(_closed_by_server(s, max(deadline - time.monotonic(), 0.01)) for s in slow)
    finally:
        for sock in slow:
            sock.close()
        process.terminate()
        stderr = process.communicate(timeout=30)[1]
    assert b"holds 64 connections; raise ulimit -n" in stderr


class _Blocking:
    """A collection whose answers wait for ``release`` (while ``hold``)."""
    name = "b"
    clusters = []
    hold = True

    def __init__(self):
        self.release = threading.Event()
        self.started = threading.Semaphore(0)

    def current(self, recheck=False):
        return self

    def answer(self, request, deadline=None):
        def body():
            if self.hold:
                self.started.release()
                self.release.wait(20)
            yield b"done\n"
        return "text/plain", body()


def test_connection_cap_503_when_all_answer_and_header_timeouts():
    blocking = _Blocking()
    server = make_server({"b": blocking}, port=0, access_log=None,
                         bounds=Bounds(connections=2, header_seconds=0.5, idle_seconds=1))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    port = server.server_address[1]
    busy = []
    try:
        for _ in range(2):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /b/cdx?url=example.com HTTP/1.1\r\nHost: x\r\n\r\n")
            busy.append(sock)
            assert blocking.started.acquire(timeout=10)
        # both answering: a third is told at once, without a request
        with socket.create_connection(("127.0.0.1", port), timeout=10) as third:
            answer = third.recv(1000)
        assert answer.startswith(b"HTTP/1.1 503 ") and b"too many connections" in answer
        blocking.release.set()
        for sock in busy:
            answer = b""
            while b"done" not in answer:
                answer += sock.recv(1000) or pytest.fail(f"no answer: {answer!r}")
        # a client that sends its headers byte by byte is closed after header_seconds,
        # one that sends nothing too; a client waiting between requests after idle_seconds
        with socket.create_connection(("127.0.0.1", port), timeout=10) as trickle, \
                socket.create_connection(("127.0.0.1", port), timeout=10) as silent:
            started = time.monotonic()
            closed = False
            for byte in b"GET /collinfo.json HTTP/1.1\r\nHost: x\r\n":
                try:
                    trickle.sendall(bytes([byte]))
                except OSError:
                    closed = True
                    break
                time.sleep(0.1)
            assert closed or _closed_by_server(trickle, 3)
            assert time.monotonic() - started < 3.5
            assert _closed_by_server(silent, 1)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:
            idle.sendall(b"GET /collinfo.json HTTP/1.1\r\nHost: x\r\n\r\n")
            time.sleep(0.2)
            assert idle.recv(10000).startswith(b"HTTP/1.1 200")
            started = time.monotonic()
            assert _closed_by_server(idle, 5)
            assert 0.5 < time.monotonic() - started < 3
    finally:
        blocking.release.set()
        for sock in busy:
            sock.close()
        server.stop()
        thread.join()


class _Endless:
    """A collection whose answer is larger than any socket buffer."""
    name = "e"
    clusters = []

    def current(self, recheck=False):
        return self

    def answer(self, request, deadline=None):
        return "text/plain", (b"x" * 65535 + b"\n" for _ in range(4096))


def test_a_client_that_stops_reading_is_let_go(caplog):
    """A client that takes no more of an answer for idle_seconds is disconnected, and
    that is not taken for a cluster that cannot be read."""
    log = LogCapture()
    server = make_server({"e": _Endless()}, port=0, access_log=log,
                         bounds=Bounds(connections=4, header_seconds=5, idle_seconds=0.5))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        with caplog.at_level(logging.WARNING), \
                socket.create_connection(server.server_address[:2], timeout=10) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"GET /e/cdx?url=example.com HTTP/1.1\r\nHost: x\r\n\r\n")
            deadline = time.monotonic() + 20
            while "/e/cdx" not in log.text and time.monotonic() < deadline:
                time.sleep(0.1)
        assert '"GET /e/cdx?url=example.com HTTP/1.1" 200' in log.text
        assert "ended early" not in log.text and "collection" not in caplog.text
    finally:
        server.stop()
        thread.join()


def test_waiting_clients_make_room_for_new_ones(crawls, tmp_path):
    """At the bound, a new connection closes the one that has waited longest."""
    out = tmp_path / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")
    collections = open_collections([f"c={out}"])
    server = make_server(collections, port=0, access_log=None,
                         bounds=Bounds(connections=3, header_seconds=30, idle_seconds=30))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        slow = _slow_sockets(server.server_address[1], 3)
        assert servers.get(base + "/c/cdx", url="*.com", limit="1")[0] == 200
        assert _closed_by_server(slow[0], 2)
        assert not any(_closed_by_server(s, 0.3) for s in slow[1:])
    finally:
        for sock in slow:
            sock.close()
        server.stop()
        thread.join()


# -- what an error and the log show --------------------------------------------------------

def test_control_bytes_are_escaped_in_the_access_log(crawls, tmp_path):
    out = tmp_path / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")
    log = LogCapture()
    with servers.ours(open_collections([f"c={out}"]), access_log=log) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /c/cdx?url=a\x1b[2J\x9b\"x\\ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            while sock.recv(65536):
                pass
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /\x1b]0;owned\x07 a b HTTP/1.1\r\n\r\n")  # a malformed request
            while sock.recv(65536):
                pass
    assert not any(c in log.text.replace("\n", "") for c in "\x1b\x9b\x07")
    assert '"GET /c/cdx?url=a\\x1b[2J\\x9b\\"x\\\\ HTTP/1.1"' in log.text
    assert "\\x1b]0;owned\\x07" in log.text
    assert printable("a\tb\x7f") == "a\\x09b\\x7f"


def test_errors_name_the_collection_not_server_paths(crawls, tmp_path, caplog):
    out = tmp_path / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")
    collections = open_collections([f"mine={out}"])
    shard = next((out / "cluster").glob("build-*/cdx-00000.gz"))
    first = every_line(out)[0]
    shard.unlink()
    with caplog.at_level(logging.WARNING), servers.ours(collections) as base:
        status, _, body = servers.get(base + "/mine/cdx", url=json.loads(first.split(b" ", 2)[2])["url"])
    message = json.loads(body)["message"]
    assert status == 502 and message.startswith("collection mine: cannot read the index: ")
    assert "cdx-00000.gz" in message and str(tmp_path) not in message
    assert str(shard) in caplog.text  # the server's log says where


def test_a_remote_loc_naming_elsewhere_is_warned_about(crawls, tmp_path, caplog):
    site = tmp_path / "site"
    build([crawls / "crawl-1"], site / "out", "--shards", "2", "--lines-per-block", "4")
    loc = site / "out" / "cluster" / "cluster.loc"
    lines = loc.read_text().splitlines()
    loc.write_text("".join(f"{line.split(chr(9))[0]}\thttp://elsewhere.example/{line.split(chr(9))[0]}\n"
                           for line in lines))
    with rangeserver.serving(site) as remote, caplog.at_level(logging.WARNING):
        collections = open_collections([f"r={remote.url}/out"])
        with servers.ours(collections) as base:
            tld = tlds(every_line(site / "out"))[0]
            status, _, body = servers.get(base + "/r/cdx", url=tld, matchType="domain", output="json")
            assert status == 200 and body == truth(str(site / "out"), tld)
    assert "ignoring 2 location(s) that are not the shard beside the index" in caplog.text
    assert "http://elsewhere.example/" in caplog.text
    # one beside the index (as build writes it) is not warned about
    caplog.clear()
    loc.write_text("\n".join(lines) + "\n")
    with rangeserver.serving(site) as remote, caplog.at_level(logging.WARNING):
        open_collections([f"r={remote.url}/out"])
    assert "ignoring" not in caplog.text


# -- where shards are read ----------------------------------------------------------------

def test_a_symlinked_shard_out_of_the_cluster_is_refused_everywhere(crawls, tmp_path, capsys):
    """query, copy check and serve refuse a shard whose symbolic link leads out of the
    cluster's directory, as export does: one rule."""
    out = tmp_path / "out"
    build([crawls / "crawl-1"], out, "--shards", "2", "--lines-per-block", "4")
    lines = every_line(out)
    shard = next((out / "cluster").glob("build-*/cdx-00000.gz"))
    outside = tmp_path / "elsewhere.gz"
    shutil.move(shard, outside)
    os.symlink(outside, shard)
    url = json.loads(lines[0].split(b" ", 2)[2])["url"]
    capsys.readouterr()
    assert cli.main(["query", str(out), url]) != cli.EXIT_OK
    err = capsys.readouterr().err
    assert "leads out of the cluster's directory" in err and "cdx-00000.gz" in err
    assert cli.main(["copy", "check", str(out), "--domains", url.split("/")[2]]) != cli.EXIT_OK
    assert "leads out of the cluster's directory" in capsys.readouterr().err
    assert cli.main(["export", str(out)]) != cli.EXIT_OK
    capsys.readouterr()
    with servers.ours({"c": Collection("c", [Cluster(out)])}) as base:
        status, _, body = servers.get(base + "/c/cdx", url=url)
    assert status == 502 and "leads out of the cluster's directory" in json.loads(body)["message"]
    # a link that stays inside is read
    os.remove(shard)
    inside = out / "cluster" / "kept.gz"
    shutil.move(outside, inside)
    os.symlink(inside, shard)
    assert every_line(out) == lines
