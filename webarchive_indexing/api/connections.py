"""The connections of ``serve``'s workers (``Bounds``): a worker holds at most
``connections`` of them; a client has ``header_seconds`` to send a request's line and
headers (the first counted from its connection) and ``idle_seconds`` for its next request
or to take more of an answer. One beyond the bound closes the connection that has waited
longest for a request, or, all of them answering, is answered ``503`` at once: slow or
idle clients never keep a new one out."""
import logging
import mmap
import resource
import select
import socket
import sys
import threading
import time
from collections import namedtuple
from http.server import ThreadingHTTPServer

from ..options import DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS

__all__ = ["Bounds", "BoundedServer", "DEFAULT_BOUNDS", "WAITING", "READING", "BUSY", "Peers",
           "bounds", "close"]

log = logging.getLogger(__name__)

# What a worker allows its clients
Bounds = namedtuple("Bounds", "connections header_seconds idle_seconds")
DEFAULT_BOUNDS = Bounds(DEFAULT_MAX_CONNECTIONS, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT)
# File descriptors a worker keeps beside its connections' (clusters, shards, logs)
SPARE_FILES = 64
# A connection's states: no request yet (since the last answer), a request being read
# (since its first byte, or since the connection for the first), answering
WAITING, READING, BUSY = "waiting", "reading", "busy"
BUSY_ANSWER = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
               b"Connection: close\r\nContent-Length: 62\r\n\r\n"
               b'{"message": "too many connections answering: try again soon"}\n')


# How long a worker holding more connections than another lets that one take a new one
# (should it not, being stuck, the worker takes it), looking every HANDOFF_STEP whether
# it was taken
HANDOFF_SECONDS, HANDOFF_STEP = 0.05, 0.001


class Peers:
    """How many connections each of the workers sharing a listening socket holds, in memory
    they share (made before they fork): a worker that holds more than another lets it take
    the next connection. The workers all wake at a connection, and the first to take it
    was any one: 8 kept-alive clients came out split 6 to 2, the one worker's core full
    and the other's half idle."""

    def __init__(self, workers):
        self._counts = memoryview(mmap.mmap(-1, 8 * workers)).cast("q")

    def held(self, slot, count):
        """Note that worker ``slot`` holds ``count`` connections."""
        self._counts[slot] = count

    def fewest(self):
        return min(self._counts)


class BoundedServer(ThreadingHTTPServer):
    request_queue_size = 1024
    bounds = DEFAULT_BOUNDS  # set by make_server
    # the workers on the same socket (Peers), and this one's slot in it; None alone
    peers = slot = None

    def __init__(self, *args, **kwargs):
        # connection: [state, since (monotonic)]
        self._connections = {}
        self._lock = threading.Lock()
        self._stopping = False
        self._next_sweep = 0
        # the threads answering, each taking itself out as it ends (socketserver's own list
        # is swept of ended threads at every connection: thousands of idle connections
        # made each new one cost milliseconds of the accepting thread)
        self._answering = set()
        super().__init__(*args, **kwargs)

    def get_request(self):
        if self.peers is not None:
            until = time.monotonic() + HANDOFF_SECONDS
            while (len(self._connections) > self.peers.fewest() and time.monotonic() < until
                   and select.select([self.socket], [], [], 0)[0]):
                time.sleep(HANDOFF_STEP)
        return super().get_request()  # taken meanwhile by another worker: BlockingIOError

    def _counted(self):
        """Tell the peers how many connections this worker holds (under ``_lock``)."""
        if self.peers is not None:
            self.peers.held(self.slot, len(self._connections))

    def process_request(self, request, client_address):
        if self._admit(request):
            # not a daemon: the interpreter waits for answers in flight
            thread = threading.Thread(target=self._answer, args=(request, client_address), daemon=False)
            with self._lock:
                self._answering.add(thread)
            thread.start()
            return
        try:
            # sent without waiting, and the request read if it came: closing with it unread
            # would reset the connection before the client reads the answer
            request.setblocking(False)
            request.send(BUSY_ANSWER)
            request.recv(65536)
        except OSError:
            pass
        self.shutdown_request(request)

    def _answer(self, request, client_address):
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._answering.discard(threading.current_thread())

    def server_close(self):
        """Close the socket and wait for the requests in flight."""
        super().server_close()
        with self._lock:
            answering = list(self._answering)
        for thread in answering:
            thread.join()

    def _admit(self, connection):
        """Whether to answer ``connection``: below the bound, or after closing the
        connection that has waited longest for a request; not if all are answering."""
        now = time.monotonic()
        with self._lock:
            oldest = None
            if len(self._connections) >= self.bounds.connections:
                waiting = [(since, c) for c, (state, since) in self._connections.items() if state != BUSY]
                if not waiting:
                    return False
                oldest = min(waiting, key=lambda item: item[0])[1]
                del self._connections[oldest]
            # the first request is counted from the connection
            self._connections[connection] = [READING, now]
            self._counted()
        if oldest is not None:
            close(oldest)
        return True

    def shutdown_request(self, request):
        with self._lock:
            self._connections.pop(request, None)
            self._counted()
        super().shutdown_request(request)

    def mark(self, connection, state):
        """Note a connection ``WAITING`` (between requests), ``READING`` a request or
        ``BUSY`` answering; False once the server is stopping."""
        with self._lock:
            known = self._connections.get(connection)
            # a request read is counted from its first byte, or from the connection
            if known is not None and not (state == READING and known[0] == READING):
                known[:] = [state, time.monotonic()]
            return not self._stopping

    def service_actions(self):
        """Close the connections whose request has taken longer than ``header_seconds``
        to come (the socket's timeout bounds each read, not a request sent byte by byte)."""
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + min(1.0, self.bounds.header_seconds / 4)
        with self._lock:
            late = [c for c, (state, since) in self._connections.items()
                    if state == READING and now - since > self.bounds.header_seconds]
        for connection in late:
            close(connection)

    def stop(self):
        """Take no more connections, close those not answering, let the others finish."""
        self.shutdown()
        with self._lock:
            self._stopping = True
            idle = [c for c, (state, _) in self._connections.items() if state != BUSY]
        for connection in idle:
            close(connection)
        self.server_close()

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def close(connection):
    """End ``connection`` from here: the thread reading or writing it sees it end."""
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def bounds(options):
    """The ``Bounds`` of ``options``, its connections within what a process may open."""
    connections = options.max_connections
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if files != resource.RLIM_INFINITY and connections > files - SPARE_FILES:
        connections = max(files - SPARE_FILES, 1)
        log.warning("--max-connections %d: a worker may open %d files (ulimit -n), so it holds "
                    "%d connections; raise ulimit -n for more", options.max_connections, files, connections)
    return Bounds(connections, options.header_timeout, options.idle_timeout)
