"""Reading from where a copy reads and writes, with retries: one record (a ranged read,
checked to be one complete gzip member, or a .warc.zst's frames of one record, holding a
WARC record), and the small reads and writes of plans, chunks and reports (``again``).
"""
import io
import os
import urllib.parse
import zlib

from ..util import retry
from .. import storage
from ..warc.magic import compression
from ..options import DEFAULT_LEVELS, DEFAULT_RETRIES, UsageError
from ..warc.raw import decode_record, record_writer
from ..warc.base import ArchiveError
from ..inputs.discovery import InputError, dictionary_file
from ..warc.zstdwarc import DictionaryError, file_dictionary

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
    ``warc_prefix`` (a directory, or an ``s3://`` / ``http(s)://`` prefix), as
    ``storage.below`` decides (a name that could lead anywhere else, a local one through
    a symbolic link too, raises ``Failed``: the index names what is read, not where, and
    may come from someone else). Over HTTP the name is a path, every character of it
    escaped (a ``%2e%2e`` is not a ``..``, a ``?`` not a query)."""
    try:
        path = storage.below(warc_prefix, filename)
    except storage.Outside:
        raise Failed(f"the CDX filename {filename!r} is not a name below --warc-prefix "
                     f"{warc_prefix}: not read", permanent=True) from None
    if storage.backend_name(warc_prefix) == "web":
        return storage.resolve(warc_prefix, urllib.parse.quote(filename, safe="/"))
    return path


def unpack(data, length, path="", offset=0, zstd_dictionary=None, whole=True):
    """(how the record read as ``data``, ``length`` bytes at ``offset`` of ``path``, is
    compressed: "gz", "zst" or None; its bytes), if ``data`` is one complete gzip member
    holding a WARC record, the whole frames of one WARC record of a .warc.zst (decompressed
    with the file's dictionary, else the one in ``zstd_dictionary``), or a record of an
    uncompressed WARC; else raises ``Failed``. Unless ``whole``, of a gzip member only its
    first ``HEAD_BYTES`` are kept (all of it is checked)."""
    if len(data) != length:
        raise Failed(f"short read: {len(data)} of {length} bytes")
    kind = compression(data[:4])
    if kind == "zst":
        return kind, _zstd_record(data, path, offset, zstd_dictionary)
    if kind is None:
        if data.startswith(b"WARC/"):
            return kind, data
        raise Failed("not a gzip member, zstd frames or a WARC record at this offset")
    inflate = zlib.decompressobj(wbits=31)
    try:
        head = inflate.decompress(data, HEAD_BYTES)
        rest = []
        while inflate.unconsumed_tail and not inflate.eof:  # zlib checks the CRC and length
            more = inflate.decompress(inflate.unconsumed_tail, 1 << 20)
            if whole:
                rest.append(more)
    except zlib.error as exc:
        raise Failed(f"corrupt gzip member: {exc}") from None
    if not inflate.eof:
        raise Failed("incomplete gzip member (cut short)")
    if inflate.unused_data or inflate.unconsumed_tail:
        raise Failed("more than one gzip member in the record's bytes")
    if head.startswith(b"WARC/"):
        return kind, b"".join([head, *rest])
    first = head.split(b"\n", 1)[0].split(b" ")
    if len(first) >= 5 and first[-1].strip().isdigit():
        raise Failed("an ARC record: ARC records are not copied into WARC files", permanent=True)
    raise Failed("the gzip member at this offset does not hold a WARC record")


def _zstd_record(data, path, offset, zstd_dictionary):
    """The WARC record whose frames are ``data``; a dictionary that is missing, wrong or
    unusable fails the record for good (every attempt would fail alike)."""
    try:
        zdict = file_dictionary(path, zstd_dictionary)
    except (ArchiveError, DictionaryError) as exc:
        raise Failed(f"no usable zstd dictionary: {exc}", permanent=True) from None
    try:
        return decode_record(data, path, offset, zdict)
    except DictionaryError as exc:
        raise Failed(str(exc), permanent=True) from None
    except ArchiveError as exc:
        raise Failed(exc.reason) from None


def check_member(data, length, path="", offset=0, zstd_dictionary=None,
                 level=DEFAULT_LEVELS["gz"]):
    """The gzip member to write for a record read as ``data`` (see ``unpack``): ``data``
    itself if it is a gzip member; else the record's bytes compressed (at ``level``) into a
    member of their own."""
    kind, record = unpack(data, length, path, offset, zstd_dictionary, whole=False)
    if kind == "gz":
        return data
    member = io.BytesIO()
    record_writer(member, "gz", level)([record])
    return member.getvalue()


def fetch_record(path, offset, length, retries=DEFAULT_RETRIES, zstd_dictionary=None,
                 member=True, level=DEFAULT_LEVELS["gz"]):
    """One record, read with one ranged read (again on transient errors, ``retries`` more
    times, as ``retry.COPY`` says): its gzip member (``check_member``, which makes one at
    ``level`` where the source has none), or unless ``member`` its bytes (``unpack``).
    Raises ``Failed`` with the last reason."""
    def attempt():
        try:
            data = storage.read_range(path, offset, length)
            if member:
                return check_member(data, length, path, offset, zstd_dictionary, level)
            return unpack(data, length, path, offset, zstd_dictionary)[1]
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


def check_dictionary(path, flag="--zstd-dictionary"):
    """The zstd dictionary file given as ``flag``, checked and made absolute (None for None);
    ``UsageError`` unless it is a usable dictionary."""
    try:
        return dictionary_file(path)
    except InputError as exc:
        raise UsageError(f"{flag}: {exc}") from None


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
