"""Reading from where a copy reads and writes, with retries: one record (a ranged read,
checked to be one complete gzip member holding a WARC record), and the small reads and
writes of plans, chunks and reports (``again``).
"""
import os
import urllib.parse
import zlib

from .. import retry, storage
from ..options import DEFAULT_RETRIES, UsageError

# How much of a record is decompressed and kept to check what it holds.
HEAD_BYTES = 1 << 12


def again(action, where, retries=DEFAULT_RETRIES):
    """``action()`` on the file or directory ``where``; if that is remote, again (``retries``
    more times, as ``retry.COPY`` says) when it fails with anything but a permanent error:
    the small reads and writes of plans, chunks and reports, which S3 may answer with a
    storm of 503s that outlasts botocore's retries."""
    if storage.is_local(where):
        return action()
    return retry.call(action, retry.COPY.with_attempts(retries + 1),
                      lambda exc: not isinstance(exc, retry.PERMANENT))


class Failed(Exception):
    """A record that cannot be copied, and why."""

    def __init__(self, reason, permanent=False):
        super().__init__(reason)
        self.permanent = permanent


def source_path(warc_prefix, filename):
    """Where the record's archive is: ``filename`` (a CDX ``filename``) below
    ``warc_prefix`` (a directory, or an ``s3://`` / ``http(s)://`` prefix). A name that
    could lead anywhere else (absolute, a URI, with a ``..`` or empty first segment, a
    backslash or a control character) raises ``Failed``: the index names what is read,
    not where, and may come from someone else. Over HTTP the name is a path, every
    character of it escaped (a ``%2e%2e`` is not a ``..``, a ``?`` not a query)."""
    if (not filename or "://" in filename or filename.startswith("/") or "\\" in filename
            or ".." in filename.split("/") or any(ord(c) < 32 or c == "\x7f" for c in filename)):
        raise Failed(f"the CDX filename {filename!r} is not a name below --warc-prefix "
                     f"{warc_prefix}: not read", permanent=True)
    if storage.backend_name(warc_prefix) == "web":
        filename = urllib.parse.quote(filename, safe="/")
    return storage.resolve(warc_prefix, filename)


def check_member(data, length):
    """The gzip member to write for a record read as ``data``, if it is one complete
    member of ``length`` bytes holding a WARC record (a raw record from an uncompressed
    WARC is compressed into a member of its own); else raises ``Failed``."""
    if len(data) != length:
        raise Failed(f"short read: {len(data)} of {length} bytes")
    if not data.startswith(b"\x1f\x8b"):
        if data.startswith(b"WARC/"):
            return zlib_member(data)
        raise Failed("not a gzip member or a WARC record at this offset")
    inflate = zlib.decompressobj(wbits=31)
    try:
        head = inflate.decompress(data, HEAD_BYTES)
        while inflate.unconsumed_tail and not inflate.eof:  # zlib checks the CRC and length
            inflate.decompress(inflate.unconsumed_tail, 1 << 20)
    except zlib.error as exc:
        raise Failed(f"corrupt gzip member: {exc}") from None
    if not inflate.eof:
        raise Failed("incomplete gzip member (cut short)")
    if inflate.unused_data or inflate.unconsumed_tail:
        raise Failed("more than one gzip member in the record's bytes")
    if head.startswith(b"WARC/"):
        return data
    first = head.split(b"\n", 1)[0].split(b" ")
    if len(first) >= 5 and first[-1].strip().isdigit():
        raise Failed("an ARC record: ARC records are not copied into WARC files", permanent=True)
    raise Failed("the gzip member at this offset does not hold a WARC record")


def zlib_member(data):
    compress = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compress.compress(data) + compress.flush()


def fetch_record(path, offset, length, retries=DEFAULT_RETRIES):
    """The gzip member of one record, read with one ranged read (again on transient errors,
    ``retries`` more times, as ``retry.COPY`` says); raises ``Failed`` with the last reason."""
    def attempt():
        try:
            return check_member(storage.read_range(path, offset, length), length)
        except FileNotFoundError:
            raise Failed(f"source archive not found: {path}", permanent=True) from None
        except retry.PERMANENT as exc:
            raise Failed(f"cannot read {path}: {exc.strerror or exc}", permanent=True) from None
        except Failed:
            raise
        except Exception as exc:  # what the S3/HTTP clients raise for a failed or cut read
            raise Failed(f"{type(exc).__name__}: {exc}") from exc

    try:
        return retry.call(attempt, retry.COPY.with_attempts(retries + 1),
                          lambda exc: isinstance(exc, Failed) and not exc.permanent)
    except Failed as exc:
        if exc.permanent or not retries:
            raise
        raise Failed(f"after {retries + 1} attempts: {exc}") from None


def check_prefix(prefix):
    """``UsageError`` unless records can be read from ``prefix`` with one ranged read each."""
    if storage.is_supported(prefix) and not storage.reads_ranges(prefix):
        raise UsageError(f"--warc-prefix {prefix}: hdfs:// and s3a:// have no ranged reads here "
                         "(every record would read its archive from the start); use s3:// for "
                         "S3, or https://")
    if not storage.is_supported(prefix):
        raise UsageError(f"--warc-prefix {prefix}: expected s3://bucket/, http(s)://host/ or a "
                         "local directory")
    if storage.is_local(prefix) and not os.path.isdir(prefix):
        raise UsageError(f"--warc-prefix {prefix}: no such directory (a local prefix is the "
                         "directory the CDX filenames are relative to)")
