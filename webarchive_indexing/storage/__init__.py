"""Reading and publishing files where the jobs keep them: local paths, ``s3://bucket/key``,
Hadoop file systems (``hdfs:///path``, ``hdfs://namenode/path``, ``s3a://bucket/key``),
or, for reading only, ``http://`` and ``https://`` URLs.

One API for all of them: each function hands its path to the backend that owns the
path's scheme (``BACKENDS``), one module each (``local``, ``s3``, ``web``, ``hadoop``),
and callers never look at a scheme themselves; what differs between places (can a
directory be swapped in with a rename, are ranges read without reading from the start,
is there a local path) is asked here.

Everything an index points to is published atomically: written under a temporary name
and renamed into place (locally, and on Hadoop file systems), or staged in a local
temporary file and uploaded once complete (on S3, where an object appears whole or not
at all), so a reader (or a rerun's ``--skip-existing``) never sees half a file.

    write_atomic("out/cdx/a.cdx.gz", data)
    write_atomic("s3://bucket/out/cdx/a.cdx.gz", data)

Ranged reads (``read_range``, ``fetch_range``) over HTTP and from S3 try again what may
pass the next time: a 429 or 5xx answer, a connection refused, reset or timed out, a body
cut short. They back off exponentially with jitter, and after the attempts of
``retry.READS`` raise an ``OSError`` naming the URL, the range and the last failure.
botocore retries S3 requests itself, but not a body that breaks off while it streams:
that is retried here. Streams (``open_read``, ``read_bytes``, ``download``) resume where a
broken connection stopped instead, up to ``RESUMES`` times in a row. Every HTTP request,
each attempt of a retried one, is told to the functions given to
``add_request_listener`` (``query --verbose`` prints them; tests count them).

A backend other than ``local`` (and the HTTP, S3 and Hadoop libraries, and tempfile) is
imported when first needed, not with this package: importing urllib3 (through botocore)
alone takes longer than indexing a small local archive, and most runs never leave the
local disk.
"""
import errno
import importlib
import os
import re
import shutil

from . import local
from .common import READ_BUFFER, RESUMES, add_request_listener, join, remove_request_listener

__all__ = ["READ_BUFFER", "RESUMES", "abspath", "add_request_listener", "backend_name",
           "basename", "dirname", "download", "exists", "fetch_range", "inside", "is_local",
           "of_environment",
           "is_supported", "is_writable", "join", "list_files", "local_path",
           "makedirs", "open_atomic", "open_read", "publish", "read_bytes", "read_range",
           "reads_ranges", "remove", "remove_leftovers", "remove_request_listener",
           "remove_temp_files", "remove_tree", "resolve", "size",
           "staging_path", "version", "write_atomic"]

# Failures of the machine a command runs on, not of what it reads: never an input's problem
# (skipped with --on-error skip), always the end of the command
ENVIRONMENT = (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC, errno.EDQUOT)


def of_environment(exc):
    """Whether ``exc`` is an ``OSError`` of the machine (``ENVIRONMENT``), not of a file."""
    return isinstance(exc, OSError) and exc.errno in ENVIRONMENT


# The modules of this package that read and write URIs, and the schemes each owns; local
# owns the paths without one
BACKENDS = {"s3": ("s3://",), "web": ("http://", "https://"), "hadoop": ("hdfs://", "s3a://")}
_OWNERS = tuple((scheme, name) for name, schemes in BACKENDS.items() for scheme in schemes)


def _owner(path):
    """The backend that owns the scheme of ``path`` (``local`` for a path without one), or
    None for a scheme that none owns."""
    if "://" not in path:
        return local
    for scheme, name in _OWNERS:
        if path.startswith(scheme):
            return importlib.import_module(f"{__name__}.{name}")
    return None


def backend_name(path):
    """The name of the backend that owns ``path`` (``local``, or a key of ``BACKENDS``), or
    None for a scheme that none owns."""
    owner = _owner(path)
    return owner and owner.__name__.rsplit(".", 1)[-1]


def _backend(path):
    # a URI of a scheme no backend owns goes to local, which does not find it
    return _owner(path) or local


def _writer(path):
    """The backend that writes (or removes) ``path``: never local for a URI of a scheme no
    backend owns (``file://``, ``gs://``...), which it would take for a relative path and
    write below the working directory, outside the place the user named."""
    owner = _owner(path)
    if owner is None:
        raise OSError(errno.EPROTONOSUPPORT, "no store here writes URIs of this scheme: give "
                      "a local path (not a file:// URI), or an s3://, hdfs:// or s3a:// one",
                      path)
    return owner


# -- what a place is -----------------------------------------------------------------------

def is_local(path):
    """Whether ``path`` is a path on this machine's file systems, not a URI."""
    return _owner(path) is local


def is_supported(path):
    """Whether some backend reads ``path`` (a local path, or a URI of a scheme known here)."""
    return _owner(path) is not None


def is_writable(path):
    """Whether files can be written at ``path`` (not over HTTP, not an unknown scheme)."""
    owner = _owner(path)
    return owner is not None and owner.WRITABLE


def reads_ranges(path):
    """Whether a range of the file ``path`` is read without reading the file from its start
    (local files, S3, HTTP; not Hadoop file systems, through ``hadoop fs``)."""
    owner = _owner(path)
    return owner is not None and owner.RANGED_READS


def local_path(path):
    """The path on this machine of ``path`` (as it is, or of a ``file://`` URL), or None
    for a file elsewhere."""
    if path.startswith("file://"):
        return path[len("file://"):]
    return path if is_local(path) else None


# -- paths ---------------------------------------------------------------------------------

# Paths are alike for every backend but local: a URI is absolute, its parts joined by "/"
# (one of a scheme no backend owns too: taken for a relative local path, it would lead
# below the working directory)

def abspath(path):
    """A local path made absolute; a URI as it is."""
    return os.path.abspath(path) if is_local(path) else path


def dirname(path):
    return os.path.dirname(path) if is_local(path) else path.rsplit("/", 1)[0]


def basename(path):
    return path.rsplit("/", 1)[-1]


def resolve(base, name):
    """``name`` in the directory ``base``: as ``os.path.join`` does for a local ``base``
    (an absolute ``name`` stays as it is), else ``join``."""
    return os.path.join(base, name) if is_local(base) else join(base, name)


class Outside(ValueError):
    """A name from data that would reach outside the place it must stay in."""


def below(directory, name):
    """Where ``name``, a name from data (a CDX ``filename``, a shard in
    ``cluster.idx`` or ``.loc``, a path in ``contents.json``, an S3 key), is in
    ``directory``: the one decision of what such a name may reach. ``Outside`` (saying
    why) for a name that could lead anywhere else: empty, absolute, a URI, with a ``..``,
    ``.`` or empty segment, a backslash or a control character; or, locally, one whose
    symbolic links lead out of ``directory``. The index or list that holds the name says
    what is read, never where: it may come from someone else."""
    if (not name or "://" in name or name.startswith("/") or _UNSAFE.search(name)
            or any(segment in ("", ".", "..") for segment in name.split("/"))):
        raise Outside(f"{name!r} is not a name below {directory}")
    path = resolve(directory, name)
    if not inside(path, directory):
        raise Outside(f"{name!r} leads out of {directory} (a symbolic link)")
    return path


def inside(path, directory):
    """Whether ``path`` is a file below ``directory``: a local one where it leads once its
    symbolic links are followed (a link out of ``directory`` is outside it), a URI by its
    name (no ``..`` segment). ``below`` asks it of every name from data; a path a reader
    put together itself (a ``.loc`` location resolved as pywb does) is asked directly."""
    if is_local(path):
        return os.path.realpath(path).startswith(os.path.join(os.path.realpath(directory), ""))
    return (path.startswith(directory.rstrip("/") + "/")
            and ".." not in path[len(directory):].split("/"))


# Control characters and backslashes: never in a name a path is made of
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\\]")


def safe_path(name):
    """``name`` as a relative path that stays below the directory it is joined to.

    Empty and ``.`` segments (a leading ``/``, ``a//b``) are dropped, ``..`` becomes
    ``%2E%2E``, control characters and backslashes become ``%XX``. A plain relative
    name is returned as it is.
    """
    segments = []
    for segment in name.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            segment = "%2E%2E"
        segments.append(_UNSAFE.sub(lambda m: "%%%02X" % ord(m.group()), segment))
    return "/".join(segments) or "%2E"


# -- reading -------------------------------------------------------------------------------

def open_read(path):
    """A binary file object reading ``path``; for S3, HTTP and Hadoop file systems, a
    stream that can ``peek`` but not seek."""
    return _backend(path).open_read(path)


def read_bytes(path):
    return _backend(path).read_bytes(path)


def read_range(path, offset, length):
    """``length`` bytes of ``path`` from ``offset`` (fewer at its end)."""
    return _backend(path).read_range(path, offset, length)


def fetch_range(path, offset, length):
    """``length`` bytes of ``path`` from ``offset`` (fewer at its end, none past it), and
    the size of the whole file: ``(data, size)``.

    The size comes with the same answer (S3's and HTTP's ``Content-Range``), so a
    caller can check that the file is still the one a small index of it was made
    from. It is None if an HTTP server does not say (``Content-Range: bytes 0-9/*``).
    """
    return _backend(path).fetch_range(path, offset, length)


def size(path):
    return _backend(path).size(path)


def version(path):
    """What tells this version of the file ``path`` from another (a dict, compared whole):
    its size, and its modification time (local disks, Hadoop file systems) or ETag (S3);
    over HTTP its size only. As many requests as ``size``."""
    return _backend(path).version(path)


def exists(path):
    return _backend(path).exists(path)


def list_files(directory):
    """Every file under ``directory`` (recursively; on S3, every key under the prefix), sorted."""
    return _backend(directory).list_files(directory)


def download(url, local_path):
    """Copy the file ``url`` to the local file ``local_path``."""
    os.makedirs(os.path.dirname(local_path) or ".", exist_ok=True)
    _backend(url).download(url, local_path)


# -- writing -------------------------------------------------------------------------------

def open_atomic(path):
    """A file to write ``path`` through (a context manager); it appears under its name only
    once complete."""
    return _writer(path).open_atomic(path)


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` so that it appears whole or not at all."""
    with open_atomic(path) as fh:
        fh.write(data)


def staging_path(path):
    """A new, empty local file to write what ``publish`` then makes ``path``: beside
    ``path`` where it is local (publishing renames it), else in the temporary directory."""
    if is_local(path):
        return local.staging_path(path)
    import tempfile
    fd, staged = tempfile.mkstemp(prefix=".tmp-", suffix="-" + basename(path))
    os.close(fd)
    return staged


def publish(staged, path):
    """Make the complete local file ``staged`` (from ``staging_path(path)``) the file
    ``path``, atomically; ``staged`` is gone after."""
    if is_local(path):
        local.publish(staged, path)
        return
    with open(staged, "rb") as src, open_atomic(path) as dst:
        shutil.copyfileobj(src, dst, READ_BUFFER)
    os.unlink(staged)


def remove_leftovers(paths):
    """Remove what writes of ``paths`` that were killed left beside them: their
    temporary files (local only: elsewhere nothing is left, as uploads appear whole)."""
    local.remove_leftovers([path for path in paths if is_local(path)])


def remove_temp_files(directory, recursive=False):
    """Remove the temporary files that killed writes left in ``directory`` (and below it,
    if ``recursive``); local only: elsewhere an upload leaves nothing."""
    if is_local(directory):
        local.remove_temp_files(directory, recursive)


def makedirs(path):
    _writer(path).makedirs(path)


def remove(path):
    """Remove the file ``path``; nothing if it is not there."""
    _writer(path).remove(path)


def remove_tree(directory):
    """Delete ``directory`` and everything in it (on S3, every key under the prefix)."""
    _writer(directory).remove_tree(directory)
