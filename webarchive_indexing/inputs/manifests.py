"""Manifests: text files (plain or gzipped, local or remote) listing one input a line, as
the original jobs took them (``#`` starts a comment; relative lines are relative to the
manifest), read in bounded lines.
"""
import os

from .. import storage
from .names import ARCHIVE_EXTENSIONS, InputError, excerpt, shown_name

# The longest manifest line taken for a path (an S3 key holds 1024 bytes, a local path
# 4096): a file of longer lines is no manifest, and is not read on into memory
MANIFEST_LINE_MAX = 8192


def _manifest_problem(line):
    """Why ``line`` (read with at most MANIFEST_LINE_MAX + 1 bytes) is no line of a
    manifest, or None."""
    if len(line) > MANIFEST_LINE_MAX:
        return f"a line longer than {MANIFEST_LINE_MAX} bytes"
    if b"\0" in line:
        return f"a NUL byte (byte {line.index(bytes(1))} of the line)"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start} of the line)"
    return None


def read_manifest(path):
    """The paths listed in a manifest file (plain or gzipped, local or on S3), made absolute.

    Local lines are normalized (``../x`` is the manifest directory's sibling); lines of
    a remote manifest are joined to its prefix as they are (an S3 key is what it says).
    A line is read up to MANIFEST_LINE_MAX bytes: a longer one, or one that is not text,
    is an InputError naming its offset (a file of NUL bytes is no manifest).
    """
    base = storage.dirname(storage.abspath(path))
    paths = []
    with storage.open_read(path) as raw:
        stream = raw
        if path.endswith(".gz"):
            import gzip  # (only for a gzipped manifest: cdx of an archive starts without it)
            stream = gzip.GzipFile(fileobj=raw)
        offset = 0
        while line := stream.readline(MANIFEST_LINE_MAX + 1):
            problem = _manifest_problem(line)
            if problem:
                text = " of its text" if path.endswith(".gz") else ""
                raise InputError(
                    f"{shown_name(path)}: offset {offset}{text}: {problem}: {excerpt(line)}: "
                    f"neither an archive ({' '.join(ARCHIVE_EXTENSIONS)}), nor an index, nor "
                    "a manifest (a text file listing one archive a line); name an archive "
                    "or an index as its kind is named")
            offset += len(line)
            line = line.decode("utf-8").strip()
            if not line or line.startswith("#"):
                continue
            if storage.is_local(line):
                line = storage.resolve(base, line)
                if storage.is_local(line):
                    line = os.path.normpath(line)
            paths.append(line)
    return base, paths
