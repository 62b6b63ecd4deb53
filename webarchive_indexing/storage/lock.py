"""One writer at a time per output directory.

    with hold("out", "build"):
        ...   # another build or copy into out/ now fails at once, naming this one

A local output directory is locked with ``flock`` on ``OUT/.webarchive-index.lock``,
which names the holder (command, process id, host, start time) for the message another
writer gets, and is removed when the holder is done. The kernel releases the lock when
its holder ends, however it ends, so a killed build leaves no lock behind, only the file
naming it, which the next writer takes over. On a file system without locks (some
network file systems) the writer goes on unlocked, with a warning.

A directory that is replaced whole (a columnar table) is locked by a file beside it
(``lock_file``): one inside would go with the directory it replaces.

Outputs on S3 and Hadoop file systems are not locked: keep to one build at a time there.
"""
import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import sys
import time

from .. import storage

LOCK_NAME = ".webarchive-index.lock"

log = logging.getLogger(__name__)


class Busy(OSError):
    """Another process writes into the output directory."""


def holder_text(info):
    """What a lock file says about its holder, as a message shows it."""
    try:
        holder = json.loads(info)
        return (f"'{holder['command']}' (process {holder['pid']} on {holder['host']}, "
                f"started {holder['started']})")
    except (ValueError, KeyError, TypeError):
        return "another process"


def running(pid):
    """Whether the process ``pid`` of this machine is running (another user's is)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def hold(directory, command, lock_file=None):
    """Hold the lock of the local output ``directory`` (made if missing) while the block
    runs; ``Busy`` at once if another process holds it. ``command`` names what holds it
    (``build``, ``copy``) in the message another writer gets. ``lock_file``: the lock's
    path where it is not ``directory/.webarchive-index.lock`` (its directory is made
    then, and ``directory`` is not)."""
    if not storage.is_local(directory):
        yield
        return
    path = lock_file or os.path.join(directory, LOCK_NAME)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = _lock(path, directory)
    try:
        info = {"command": f"webarchive-index {command}", "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "argv": sys.argv}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode("utf-8") + b"\n", 0)
        yield
    finally:
        # removed while still locked: a process that opened it before waits for no one
        # (it finds its file is no longer the lock, below) and the next one makes a new one
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)


def _lock(path, directory):
    """An open file descriptor of the lock file ``path``, locked."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = holder_text(os.pread(fd, 1 << 16, 0))
            os.close(fd)
            raise Busy(errno.EBUSY, f"{directory} is being written by {holder}: wait for it "
                                    "to end (or stop it), then run this again") from None
        except OSError as exc:  # no locks on this file system
            log.warning("cannot lock %s (%s): going on without a lock; run one build at a "
                        "time into it", directory, exc.strerror)
            return fd
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # its holder removed it as we locked it: lock the next one
