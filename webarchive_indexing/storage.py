"""Reading and publishing files where the jobs keep them.

Everything an index points to is published atomically: written under a
temporary name and renamed into place, so a reader (or a rerun's
``--skip-existing``) never sees half a file.

    write_atomic("out/cdx/a.cdx.gz", data)
"""
import contextlib
import os
import tempfile


def join(base, *parts):
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


def exists(path):
    return os.path.exists(path)


def abspath(path):
    return os.path.abspath(path)


def makedirs(path):
    os.makedirs(path, exist_ok=True)


@contextlib.contextmanager
def open_atomic(path):
    """A file to write ``path`` through; it appears under its name only once complete."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        # mkstemp makes the file private; published files get the usual permissions
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_temp_dir(parent, prefix):
    """A new directory under ``parent`` with the usual permissions (mkdtemp's are private)."""
    path = tempfile.mkdtemp(dir=parent, prefix=prefix)
    os.chmod(path, 0o777 & ~_umask())
    return path


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` so that it appears whole or not at all."""
    with open_atomic(path) as fh:
        fh.write(data)


def read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


def remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def size(path):
    return os.path.getsize(path)
