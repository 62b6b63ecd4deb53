"""serve with many idle kept-alive connections: a new connection costs the accepting
thread the same whatever the number open, and a stop still waits for the answers in
flight (api/connections.py)."""
import socket
import threading
import time

from test_serve_trust import _Blocking
from webarchive_indexing.api.serve import Bounds, make_server


def _answering():
    """A collection of one line, answered at once until its ``hold`` is set."""
    collection = _Blocking()
    collection.hold = False
    return collection


def _serving(collection, connections):
    server = make_server({"b": collection}, port=0, access_log=None,
                         bounds=Bounds(connections=connections, header_seconds=30, idle_seconds=30))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    return server, thread


def _ask(port):
    """A kept-alive connection that has had one whole answer."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /b/cdx?url=example.com HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = b""
    while not answer.endswith(b"\r\n\r\ndone\n"):
        chunk = sock.recv(10000)
        assert chunk, f"the connection ended after {answer!r}"
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
    return sock


def test_a_new_connection_does_not_look_at_every_thread_open(monkeypatch):
    """Each connection has a thread; socketserver swept its list of them for ended ones at
    every new connection: with thousands idle, milliseconds of the accepting thread each."""
    server, thread = _serving(_answering(), 1000)
    port = server.server_address[1]
    idle = []
    try:
        idle = [_ask(port) for _ in range(300)]
        looked = []
        is_alive = threading.Thread.is_alive
        monkeypatch.setattr(threading.Thread, "is_alive", lambda self: looked.append(self) or is_alive(self))
        _ask(port).close()
        assert len(looked) < 30, f"{len(looked)} threads looked at for one new connection"
    finally:
        monkeypatch.undo()
        for sock in idle:
            sock.close()
        server.stop()
        thread.join()


def test_a_stop_waits_for_the_answers_in_flight():
    small = _answering()
    server, thread = _serving(small, 8)
    small.hold = True
    sock = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=10)
    try:
        sock.sendall(b"GET /b/cdx?url=example.com HTTP/1.1\r\nHost: x\r\n\r\n")
        assert small.started.acquire(timeout=10)
        stopping = threading.Thread(target=server.stop)
        stopping.start()
        stopping.join(0.5)
        assert stopping.is_alive(), "the stop did not wait for the answer in flight"
        small.release.set()
        stopping.join(10)
        assert not stopping.is_alive()
        answer = b""
        while chunk := sock.recv(10000):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\ndone\n")
    finally:
        small.release.set()
        sock.close()
        thread.join()
