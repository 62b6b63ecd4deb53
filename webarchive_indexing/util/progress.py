"""What a long run shows while it works: one status line on a terminal, and sizes for people.

    progress = Progress()          # drawn only where stderr is a terminal
    progress.step("[1/3] indexing 5 archives", count=written_so_far, total=5)
    ...
    progress.done()
    progress.transfer("copying", done=lambda: (records, size), records=900, size=7_000_000)
    ...
    progress.done()
    human(7_012_345)               # '7.0 MB'
    counted(1, "archive")          # '1 archive'
"""
import sys
import threading
import time


def human(size):
    """A byte count for people: ``'532 B'``, ``'12.3 MB'`` (powers of 1000)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000


def counted(number, noun, plural=None):
    """``number`` and ``noun``, plural unless it is 1: ``'1 shard'``, ``'3 index inputs'``."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


class Progress:
    """One status line on a terminal, redrawn twice a second while work runs, with the
    seconds since it started. Where ``stream`` is not a terminal (or ``enabled`` is
    False) nothing is drawn; only the name of each step of a run is written, on a line of
    its own, so that a log shows how far a run got."""

    def __init__(self, stream=None, enabled=None):
        self.stream = stream = stream or sys.stderr  # (the one of now, not of the import)
        self.enabled = stream.isatty() if enabled is None else enabled
        self._stop = threading.Event()
        self._thread = None

    def step(self, label, count=None, total=None):
        """Start showing the step ``label``; ``count()`` (if given) is polled for ``n/total``
        (``n`` without a total)."""
        if not self.enabled:
            self.done()
            self.stream.write(label + "\n")
            return
        of = "" if total is None else f"/{total}"
        self._show(lambda: f"{label}: {count()}{of}" if count else label)

    def transfer(self, label, done, records, size):
        """Start showing ``label: r/records records, b/size`` from ``done() -> (r, b)``
        (on a terminal only)."""
        if not self.enabled:
            return

        def text():
            done_records, done_size = done()
            return f"{label}: {done_records}/{records} records, {human(done_size)}/{human(size)}"

        self._show(text)

    def _show(self, text):
        self.done()
        self._stop.clear()
        started = time.monotonic()

        def draw():
            while True:
                self.stream.write(f"\r\x1b[K{text()}  {time.monotonic() - started:.0f}s")
                self.stream.flush()
                if self._stop.wait(0.5):
                    return

        self._thread = threading.Thread(target=draw, daemon=True)
        self._thread.start()

    def done(self):
        """Stop showing what was shown, and clear its line."""
        if self._thread:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self.stream.write("\r\x1b[K")
            self.stream.flush()
