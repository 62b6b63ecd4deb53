"""Trying again what may pass the next time: one loop, with exponential backoff and jitter,
for every caller; each caller names its limits (a ``Policy``) and what it takes for
transient.

    data = retry.call(read, retry.READS, (ConnectionError, retry.Transient))

Storage's ranged reads over HTTP and from S3 use ``READS``; ``copy`` reads each record,
and its small reads and writes of plans and reports on S3, with ``COPY`` and as many
attempts as its ``--retries`` allow. botocore retries S3 requests itself before any of
these see a failure.
"""
import time

# HTTP statuses that ask to try again later
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
# Errors of a read or write that another attempt cannot cure
PERMANENT = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)


class Transient(Exception):
    """An attempt failed in a way that may pass the next time (a 503, a body cut short)."""


class Policy:
    """At most ``attempts`` calls in all, the first included. Before retry number n
    (1, 2, ...) a random wait of up to ``first * 2**(n-1)`` seconds, at most ``cap``
    ("full jitter": callers that failed together spread out)."""

    def __init__(self, attempts, first, cap):
        self.attempts, self.first, self.cap = attempts, first, cap

    def delay(self, retry):
        import random  # only for retries: its import would slow every start
        return random.uniform(0, min(self.cap, self.first * 2 ** (retry - 1)))

    def with_attempts(self, attempts):
        return Policy(attempts, self.first, self.cap)


# One ranged read over HTTP or from S3 (storage)
READS = Policy(attempts=8, first=0.2, cap=4.0)
# One record copied, or one small read or write of a copy's plan or report (its attempts
# are 1 + --retries); rounds long enough to ride out a storm of S3 SlowDowns that
# outlasts botocore's own retries
COPY = Policy(attempts=6, first=1.0, cap=20.0)


def call(attempt, policy, transient, sleep=None):
    """``attempt()``, made again after each failure that is ``transient`` (exception
    types, or a predicate taking the exception), backing off as ``policy`` says, until it
    succeeds or ``policy.attempts`` were made. The last failure is raised as it is, and so
    is at once any failure that is not transient."""
    if not callable(transient) or isinstance(transient, type):
        types = transient

        def transient(exc):
            return isinstance(exc, types)

    for number in range(policy.attempts):
        if number:
            (sleep or time.sleep)(policy.delay(number))
        try:
            return attempt()
        except Exception as exc:
            if number == policy.attempts - 1 or not transient(exc):
                raise


def describe(exc):
    """A failure in a few words: its text, after its type where the text does not name it."""
    text = str(exc)
    # "IncompleteRead(5 bytes read, ...)" names itself
    return text if isinstance(exc, Transient) or text.startswith(type(exc).__name__) \
        else f"{type(exc).__name__}: {text}"
