"""Paths on this machine's file systems (and any URI of a scheme no other backend owns,
which the functions here then do not find, as ``open`` would not).

A file is published by writing it under a temporary name beside its target and renaming
it into place once complete, with the permissions the umask gives (temporary files are
private). A whole directory is replaced in one step too, exchanged with the new one
(``replace_tree``: a columnar table).
"""
import contextlib
import errno
import glob
import os
import shutil
import sys

from . import common

WRITABLE = True
RANGED_READS = True
# Temporary names of files being written: .tmp-<random>-<name>, beside <name>
_TEMP_PREFIX = ".tmp-"


def open_read(path):
    return open(path, "rb")


def read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


def read_range(path, offset, length):
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


def fetch_range(path, offset, length):
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(length), os.fstat(fh.fileno()).st_size


def size(path):
    return os.path.getsize(path)


def version(path):
    stat = os.stat(path)
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def exists(path):
    return os.path.exists(path)


def list_files(directory):
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            yield os.path.join(root, name)


def download(url, local_path):
    with open(url, "rb") as src:
        write_stream(src, local_path)


def write_stream(src, path):
    """Copy the file object ``src`` to ``path``, atomically."""
    with open_atomic(path) as dst:
        shutil.copyfileobj(src, dst, common.READ_BUFFER)


def staging_path(path):
    """A new, empty, private file beside ``path``, to write what ``publish`` renames onto it."""
    import tempfile
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, staged = tempfile.mkstemp(dir=directory, prefix=_TEMP_PREFIX,
                                  suffix="-" + os.path.basename(path))
    os.close(fd)
    return staged


def publish(staged, path):
    """Rename the complete file ``staged`` (beside ``path``) onto ``path``."""
    # temporary files are private; published files get the usual permissions
    os.chmod(staged, 0o666 & ~_umask())
    os.replace(staged, path)


@contextlib.contextmanager
def open_atomic(path):
    staged = staging_path(path)
    try:
        with open(staged, "wb") as fh:
            yield fh
        publish(staged, path)
    except BaseException:
        os.unlink(staged)
        raise


def remove_leftovers(paths):
    """The temporary files that writes of ``paths`` left beside them when they were killed."""
    for path in paths:
        directory, name = os.path.split(path)
        pattern = f"{_TEMP_PREFIX}*-{glob.escape(name)}"
        pattern = os.path.join(glob.escape(directory or "."), pattern)
        for leftover in glob.glob(pattern):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


def remove_temp_files(directory, recursive=False):
    """The temporary files of killed writes in ``directory`` (and below, if ``recursive``)."""
    for root, dirs, files in os.walk(directory):
        for name in files:
            if name.startswith(_TEMP_PREFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(root, name))
        if not recursive:
            break


def replace_tree(new_dir, final_dir, aside):
    """Put the directory ``new_dir`` in the place of ``final_dir`` in one step: the two
    exchanged (``exchange``), then the one replaced (now at ``new_dir``) removed; renamed
    into place if there is none. Where the system cannot exchange paths, by two renames:
    the one it replaces goes to the new name ``aside`` first (for a moment there is no
    ``final_dir``: what the next writer finds so, it puts back)."""
    try:
        exchange(new_dir, final_dir)
    except FileNotFoundError:
        os.rename(new_dir, final_dir)
        return
    except OSError as exc:
        if exc.errno not in _NO_EXCHANGE:
            raise
        try:
            os.rename(final_dir, aside)
        except FileNotFoundError:
            aside = None
        os.rename(new_dir, final_dir)
        if aside:
            shutil.rmtree(aside)
        return
    shutil.rmtree(new_dir)


# What says that this system or file system exchanges no paths
_NO_EXCHANGE = (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP)
# renameat2's flag (<linux/fs.h>), renamex_np's (macOS <stdio.h>); AT_FDCWD on Linux
_RENAME_EXCHANGE, _RENAME_SWAP, _AT_FDCWD = 2, 2, -100


def exchange(first, second):
    """Swap the paths ``first`` and ``second`` (both must exist) atomically: a reader
    finds each at one or the other, never neither. ``OSError`` (ENOTSUP, EINVAL) where
    the system or the file system cannot."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    names = os.fsencode(first), os.fsencode(second)
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
        failed = libc.renameat2(_AT_FDCWD, names[0], _AT_FDCWD, names[1], _RENAME_EXCHANGE)
    elif sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        failed = libc.renamex_np(names[0], names[1], _RENAME_SWAP)
    else:
        raise OSError(errno.ENOTSUP, "this system exchanges no paths", first, None, second)
    if failed:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), first, None, second)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def makedirs(path):
    os.makedirs(path, exist_ok=True)


def remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def remove_tree(directory):
    # as much as can be: callers remove scratch space, nothing published
    shutil.rmtree(directory, ignore_errors=True)
