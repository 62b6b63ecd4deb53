"""Standard streams whose reader may go away (``query ... | head``, ``build 2>&1 | head -1``):
``Unbroken`` writes nowhere from then on, ``reader_gone`` tells whether that happened,
``to_devnull`` points a stream's file at /dev/null."""
import contextlib
import os
import select


def reader_gone(stream):
    """Whether ``stream`` is a pipe (or socket) that no one reads any more."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
    except (AttributeError, OSError, ValueError):
        return False
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def to_devnull(stream):
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


class Unbroken:
    """A text stream (stderr, or the stdout of a command whose output is not printed) whose
    reader may go away: from then on what is written goes nowhere, instead of raising
    ``BrokenPipeError`` where the command is at."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            to_devnull(self._stream)
            return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            to_devnull(self._stream)

    def __getattr__(self, name):
        return getattr(self._stream, name)
