"""Run ``webarchive-index`` and kill it (SIGKILL: no cleanup runs) at a point of its work.

    python tests/killpoint.py before 'cluster/cluster\\.loc$' build warcs/ -o out --runner inline

``before PATTERN``: as the first local file whose path matches PATTERN is about to be
renamed into place (its temporary file is complete and left behind); ``after PATTERN``:
just after it was. Every file a build publishes goes through ``storage.local.publish``.
Exits 99, saying so, if the command ended without reaching the point.
"""
import os
import re
import signal
import sys

from webarchive_indexing import cli
from webarchive_indexing.storage import local

when, pattern, argv = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3:]
publish = local.publish


def killing_publish(staged, path):
    if when == "before" and pattern.search(path):
        os.kill(os.getpid(), signal.SIGKILL)
    publish(staged, path)
    if when == "after" and pattern.search(path):
        os.kill(os.getpid(), signal.SIGKILL)


local.publish = killing_publish
status = cli.main(argv)
sys.stderr.write(f"killpoint: {when} {pattern.pattern} never reached (exit status {status})\n")
sys.exit(99)
