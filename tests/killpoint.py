"""Run ``webarchive-index`` and kill it (SIGKILL: no cleanup runs) at a point of its work.

    python tests/killpoint.py before 'cluster/cluster\\.loc$' build warcs/ -o out --runner inline

``before PATTERN``: as the first local file whose path matches PATTERN is about to be
renamed into place (its temporary file is complete and left behind); ``after PATTERN``:
just after it was; ``stop PATTERN``: stopped there instead (SIGSTOP), for the test to
continue it (SIGCONT), and then exits as the command does. Every file a build publishes goes through ``storage.local.publish``,
and a table's directory through ``storage.local.exchange`` (with the table it replaces) or
``os.rename`` (``storage.local.replace_tree``); with ``--no-exchange`` first, as on a file
system that cannot exchange paths (by two renames).
Exits 99, saying so, if the command ended without reaching the point.
"""
import errno
import os
import re
import signal
import sys

from webarchive_indexing import cli
from webarchive_indexing.storage import local

publish, rename = local.publish, os.rename
SIGNALS = {"before": signal.SIGKILL, "stop": signal.SIGSTOP}
stopped = []


def killing(move, when, pattern):
    def moving(source, path):
        if when in SIGNALS and pattern.search(path) and not stopped:
            stopped.append(path)
            os.kill(os.getpid(), SIGNALS[when])
        move(source, path)
        if when == "after" and pattern.search(path):
            os.kill(os.getpid(), signal.SIGKILL)
    return moving


def no_exchange(first, second):
    raise OSError(errno.EINVAL, "Invalid argument", first, None, second)


if __name__ == "__main__":  # (not in the workers of a pool, which import this module again)
    exchanging = sys.argv[1] != "--no-exchange"
    when, pattern, argv = sys.argv[2 - exchanging], re.compile(sys.argv[3 - exchanging]), \
        sys.argv[4 - exchanging:]
    local.publish = killing(publish, when, pattern)
    os.rename = killing(rename, when, pattern)
    local.exchange = killing(local.exchange, when, pattern) if exchanging else no_exchange
    status = cli.main(argv)
    if stopped:
        sys.exit(status)
    sys.stderr.write(f"killpoint: {when} {pattern.pattern} never reached (exit status {status})\n")
    sys.exit(99)
