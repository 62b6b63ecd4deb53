"""What the backends share: the request listeners, byte ranges and their answers, the
sizes of reads and resumes, and the one loop that resumes a broken stream
(``ResumingStream``)."""
import errno
import io
import re
from ..util import retry
from ..util.retry import Transient

# How often a read from a stream of an S3 object or HTTP file resumes after its connection
# broke, with no byte read in between.
RESUMES = 5
# Read size of a remote stream; also what a reader can peek at.
READ_BUFFER = 1 << 20

# (compiled by re when first used, not at every start)
_RANGE_HEADER = r"bytes=(\d+)-(\d*)$"
_CONTENT_RANGE = r"bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$"


def join(base, *parts):
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


# -- the request log ---------------------------------------------------------------------

_REQUEST_LISTENERS = []


def add_request_listener(fn):
    """Call ``fn(method, url, byte_range)`` for every HTTP request made from now on, to
    S3 and over http(s), each attempt of a retried request included.

    ``url`` is the ``s3://bucket/key`` of an S3 request, the URL asked for over HTTP
    (after a redirect, the one redirected to). ``byte_range`` is the ``(first, last)``
    byte asked for, both included (``last`` None for ``bytes=first-``, as a resumed
    stream asks), or None for no range. ``fn`` runs in the thread making the request.
    """
    _REQUEST_LISTENERS.append(fn)


def remove_request_listener(fn):
    _REQUEST_LISTENERS.remove(fn)


def listening():
    """Whether any request listener is there (telling them may take work)."""
    return bool(_REQUEST_LISTENERS)


def notify(method, url, byte_range):
    for fn in tuple(_REQUEST_LISTENERS):  # a listener may remove itself
        fn(method, url, byte_range)


# -- byte ranges -------------------------------------------------------------------------

def byte_range(header):
    """``(first, last)`` of a ``Range: bytes=first-last`` header, last None if open; else None."""
    match = re.match(_RANGE_HEADER, header or "")
    if not match:
        return None
    return int(match[1]), int(match[2]) if match[2] else None


def content_range(url, header):
    """``(first, last, total)`` of a ``Content-Range`` header, each None where it says ``*``."""
    match = re.match(_CONTENT_RANGE, header or "")
    if not match:
        raise OSError(errno.EIO, f"unexpected Content-Range {header!r} in the answer", url)
    return tuple(None if value in (None, "*") else int(value) for value in match.groups())


def cut(url, offset, length, content_range_header, data, declared):
    """(``length`` bytes from ``offset``, the object's size) from the body ``data`` of a
    ranged GET: the range itself if the answer has a ``Content-Range``, else the start
    of the whole object, of ``declared`` bytes if the answer says. Raises
    ``retry.Transient`` for a body cut short."""
    if content_range_header is None:
        total = len(data) if declared is None else declared
        got, expected = len(data), min(offset + length, total)
        data = data[offset:offset + length]
    else:
        first, last, total = content_range(url, content_range_header)
        if first != offset:
            raise OSError(errno.EIO, f"asked for bytes {offset}-{offset + length - 1}, "
                          f"got Content-Range {content_range_header!r}", url)
        got, expected = len(data), last - first + 1
    if got < expected:
        raise Transient(f"a short body: {got} of {expected} bytes")
    return data[:length], total


def ranged_reads(fetch, size, open_read):
    """``read_range``, ``fetch_range`` and ``read_bytes`` of a backend that reads a range
    with one request, ``fetch(path, offset, length) -> (data, size)`` (``length`` > 0),
    and streams a whole file with ``open_read``."""
    def read_range(path, offset, length):
        if length <= 0:
            return b""  # without the request for the size fetch_range makes
        return fetch(path, offset, length)[0]

    def fetch_range(path, offset, length):
        if length <= 0:
            return b"", size(path)  # a ranged request cannot ask for no bytes
        return fetch(path, offset, length)

    def read_bytes(path):
        # streamed, so that a connection that breaks resumes
        with open_read(path) as fh:
            return fh.read()

    return read_range, fetch_range, read_bytes


def retrying(url, what, attempt, transient):
    """``attempt()``, made again after each failure in ``transient`` (exception types) as
    ``retry.READS`` says; then an OSError naming ``url``, ``what`` was asked and the last
    failure."""
    try:
        return retry.call(attempt, retry.READS, transient)
    except transient as exc:
        raise OSError(errno.EIO, f"{what} failed {retry.READS.attempts} times, the last with "
                      f"{retry.describe(exc)}", url) from exc


class ResumingStream(io.RawIOBase):
    """The bytes of a remote file from one request (S3's, HTTP's); a connection that
    breaks while it is read (minutes, for a large archive) resumes where it stopped, from
    the same version of the file, up to ``RESUMES`` times in a row with no byte read in
    between; then an OSError naming the URL, the byte and the last failure.

    A backend's stream defines ``_read(buffer)`` (from the answer being read),
    ``_broken()`` (the exceptions of a connection that broke), ``_reopen()`` (a new
    answer from byte ``pos`` on, only from the same version) and ``_close_answer()``."""

    def __init__(self, url):
        super().__init__()
        self.url, self.pos = url, 0

    def readable(self):
        return True

    def readinto(self, buffer):
        for attempt in range(RESUMES + 1):
            cause = None
            try:
                count = self._read(buffer)
            except self._broken() as exc:
                cause, failure = exc, retry.describe(exc)
            else:
                failure = self._ended_early(count, buffer)
                if failure is None:
                    self.pos += count
                    return count
            if attempt == RESUMES:
                raise OSError(errno.EIO, f"broken at byte {self.pos} after {RESUMES} resumes, "
                              f"the last time by {failure}", self.url) from cause
            self._close_answer()
            self._reopen()

    def _ended_early(self, count, buffer):
        """Why reading ``count`` bytes into ``buffer`` is a connection that closed before
        the end, which the library took for the end; None when it is not."""
        return None

    def close(self):
        if not self.closed:
            self._close_answer()
        super().close()
