"""Hadoop file systems: ``hdfs:///path``, ``hdfs://namenode/path`` and ``s3a://bucket/key``
(Hadoop's S3 connector: only Hadoop knows that scheme), through the ``hadoop fs`` command,
the one client on every Hadoop node: ``$HADOOP_BIN`` if set, else ``hadoop`` on PATH.

Each call starts a JVM (a second or more), so this suits a task's few files, not many
small reads; ``hadoop fs`` has no ranged read, so a range is read by streaming the file
from its start. A file is published by ``-put -f``, which uploads it beside its target as
``<name>._COPYING_`` and renames it into place once complete. A failed command raises
an ``OSError`` naming the URI, with what ``hadoop`` printed (``FileNotFoundError`` when it
said "No such file or directory", ``PermissionError`` for "Permission denied").
"""
import contextlib
import errno
import io
import os
import re
import shutil
import subprocess
import tempfile

from . import common, local

WRITABLE = True
RANGED_READS = False
# How much of what a failed ``hadoop`` printed goes into the error
HADOOP_STDERR_MAX = 4000


class HadoopNotFound(OSError):
    """There is no ``hadoop`` command to reach a Hadoop file system with."""


def _hadoop_popen(url, args, **kwargs):
    """``hadoop fs ARGS`` started for ``url``."""
    binary = os.environ.get("HADOOP_BIN") or shutil.which("hadoop")
    if binary:
        try:
            return subprocess.Popen([binary, "fs", *args], stdin=subprocess.DEVNULL, **kwargs)
        except (FileNotFoundError, PermissionError) as exc:
            raise HadoopNotFound(errno.ENOENT, f"cannot run {binary} (HADOOP_BIN or PATH): {exc}",
                                 url) from exc
    raise HadoopNotFound(errno.ENOENT, "no hadoop command to reach a Hadoop file system with: "
                         "set HADOOP_BIN or put hadoop on PATH", url)


def _hadoop_run(url, *args):
    """(exit status, stdout, stderr) of ``hadoop fs ARGS``."""
    proc = _hadoop_popen(url, args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = proc.communicate()
    return proc.returncode, stdout, stderr


def _hadoop_fs(url, *args):
    """The stdout of ``hadoop fs ARGS``; an OSError naming ``url`` if it fails."""
    returncode, stdout, stderr = _hadoop_run(url, *args)
    if returncode:
        raise _hadoop_error(url, args[0], returncode, stderr)
    return stdout


def _hadoop_messages(command, stderr):
    """The errors ``hadoop fs COMMAND`` printed (``cat: `x': No such file or directory``),
    not the log lines (``WARN util.NativeCodeLoader: ...``) around them."""
    prefix = command.lstrip("-") + ": "
    return [line for line in stderr.decode("utf-8", "replace").splitlines()
            if line.startswith(prefix)]


def _hadoop_error(url, command, returncode, stderr):
    messages = " ".join(_hadoop_messages(command, stderr))
    kind, code = OSError, errno.EIO
    if "No such file or directory" in messages or "does not exist" in messages:
        kind, code = FileNotFoundError, errno.ENOENT
    elif "Permission denied" in messages:
        kind, code = PermissionError, errno.EACCES
    printed = stderr.decode("utf-8", "replace").strip()[-HADOOP_STDERR_MAX:] or "(nothing on stderr)"
    return kind(code, f"hadoop fs {command} exited with status {returncode}: {printed}", url)


class _HadoopStream(io.RawIOBase):
    """The bytes of a Hadoop file, streamed from ``hadoop fs -cat``; a failure to read it
    raises when opening (as ``open`` would) or at the end (a stream cut short)."""

    def __init__(self, url):
        super().__init__()
        self.url, self.proc = url, None
        self.stderr = tempfile.TemporaryFile()  # a file: a pipe left unread could fill up
        try:
            self.proc = _hadoop_popen(url, ["-cat", url], stdout=subprocess.PIPE,
                                      stderr=self.stderr)
            if not self.proc.stdout.peek(1):  # nothing at all: an empty file, or an error
                self._finish()
        except BaseException:
            self.close()
            raise

    def readable(self):
        return True

    def readinto(self, buffer):
        count = self.proc.stdout.readinto1(buffer)
        if not count and len(buffer):
            self._finish()
        return count

    def _finish(self):
        returncode = self.proc.wait()
        if returncode:
            self.stderr.seek(0)
            raise _hadoop_error(self.url, "-cat", returncode, self.stderr.read())

    def close(self):
        if not self.closed:
            if self.proc:
                if self.proc.poll() is None:  # closed before the end
                    self.proc.kill()
                self.proc.wait()
                self.proc.stdout.close()
            self.stderr.close()
        super().close()


@contextlib.contextmanager
def open_atomic(path):
    """Stage the file locally, then ``-put -f`` it onto ``path``: FsShell writes it as
    ``<path>._COPYING_`` and renames it into place once complete (removing what was
    there), so ``path`` is never a part of the file. One JVM, where uploading under a
    name of our own and renaming it took three."""
    fd, scratch = tempfile.mkstemp(prefix="hadoop-put-")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        try:
            _hadoop_fs(path, "-put", "-f", scratch, path)
        except FileNotFoundError:  # -put needs the parent directory
            _hadoop_fs(path, "-mkdir", "-p", path.rsplit("/", 1)[0])
            _hadoop_fs(path, "-put", "-f", scratch, path)
    finally:
        os.unlink(scratch)


# a line of ``hadoop fs -ls``: permissions, [replication, owner, group,] size, date, time, path
# (the S3 connectors leave some of the middle out)
_LS_LINE = re.compile(r"(\S)\S*\s.*?\d{4}-\d\d-\d\d \d\d:\d\d (.+)$")


def _uri_path(uri):
    """The path part of a URI (``/a/b`` of ``hdfs://namenode:8020/a/b``), or ``uri`` itself."""
    if "://" not in uri:
        return uri
    return "/" + uri.split("://", 1)[1].partition("/")[2]


def list_files(directory):
    try:
        listing = _hadoop_fs(directory, "-ls", "-R", directory)
    except FileNotFoundError:  # nothing there: nothing under it, as for a local directory
        return []
    # hadoop prints each path as it likes (hdfs://namenode:8020/a/b for hdfs:///a): give
    # them in the form of ``directory``, as callers cut that prefix off
    base = directory.rstrip("/")
    base_path = _uri_path(base).rstrip("/")
    files = []
    for line in listing.decode("utf-8").splitlines():
        match = _LS_LINE.match(line)
        if match and match.group(1) == "-":
            path = _uri_path(match.group(2))
            if path == base_path:  # ``directory`` is a file
                files.append(base)
            elif path.startswith(base_path + "/"):
                files.append(base + path[len(base_path):])
    return sorted(files)


# -- the API (see the package) -----------------------------------------------------------

def exists(path):
    returncode, _, stderr = _hadoop_run(path, "-test", "-e", path)
    if returncode == 0:
        return True
    # -test exits 1 for an absent path, silently, and also after an error it printed
    # ("test: Permission denied: ..."): only the former is absent
    if returncode == 1 and not _hadoop_messages("-test", stderr):
        return False
    raise _hadoop_error(path, "-test", returncode, stderr)


def size(path):
    return int(_hadoop_fs(path, "-stat", "%b", path).strip())


def version(path):
    found, modified = _hadoop_fs(path, "-stat", "%b %Y", path).split()
    return {"size": int(found), "mtime_ms": int(modified)}


def open_read(path):
    return io.BufferedReader(_HadoopStream(path), common.READ_BUFFER)


def read_bytes(path):
    return _hadoop_fs(path, "-cat", path)


def read_range(path, offset, length):
    # ``hadoop fs`` has no ranged read: stream from the start, stop after the range
    if length <= 0:
        return b""
    with open_read(path) as fh:
        while offset > 0:
            skipped = len(fh.read(min(offset, common.READ_BUFFER)))
            if not skipped:
                return b""
            offset -= skipped
        return fh.read(length)


def fetch_range(path, offset, length):
    return read_range(path, offset, length), size(path)


def download(url, local_path):
    # streamed from ``-cat``: -get's handling of an existing file varies across versions
    with open_read(url) as src:
        local.write_stream(src, local_path)


def makedirs(path):
    _hadoop_fs(path, "-mkdir", "-p", path)


def remove(path):
    # -skipTrash: a replaced or scratch file is not worth keeping in the trash
    _hadoop_fs(path, "-rm", "-f", "-skipTrash", path)


def remove_tree(directory):
    _hadoop_fs(directory, "-rm", "-r", "-f", "-skipTrash", directory)
