"""What fails and how it is said: a task that failed in another process (``TaskFailed``),
and an ``OSError`` a user can cause or meet in one line with how to fix it (``describe``)."""
import errno


class TaskFailed(Exception):
    """A task of a step failed, with what it raised (its last line): a bug, or a failure
    that was not an ``OSError`` (which are raised as such)."""


# What to do about a failure of the environment, by errno
_HINTS = {
    errno.ENOSPC: "free some space, or write elsewhere",
    errno.EDQUOT: "free some space, or write elsewhere",
    errno.EROFS: "write elsewhere",
    errno.EACCES: "check the permissions, or write elsewhere",
    errno.EPERM: "check the permissions, or write elsewhere",
    errno.EEXIST: "a file is where a directory must be: remove it, or write elsewhere",
    errno.ENOTDIR: "a file is where a directory must be: remove it, or write elsewhere",
    errno.EMFILE: "raise the limit of open files of a process, e.g. `ulimit -n 4096`",
    errno.ENFILE: "the system has too many files open: close some, or raise its limit",
    errno.ENOMEM: "free some memory, or run fewer processes at once",
}


# What only writes fail with
_WRITES = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def describe(exc, output=None):
    """One line for an ``OSError`` a user can cause or meet (a full disk, a read-only or
    misnamed output, missing credentials, a store that keeps failing): what, where, and
    how to fix it where that is known. A write that failed without naming its file
    (a full disk) is said to be into ``output``."""
    if exc.errno is None or exc.strerror is None:
        return str(exc)
    filename = exc.filename or (output if exc.errno in _WRITES else None)
    where = f"{filename}: " if filename else ""
    hint = _HINTS.get(exc.errno)
    return f"{where}{exc.strerror}" + (f" ({hint})" if hint else "")
