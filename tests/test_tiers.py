"""The test tiers (tests/tiers.py): a test's markers come from what it uses, ``--fast``
leaves out every test with a marker of ``tiers.HEAVY``, and in the fast tier a test that
starts Java or a browser, or listens on a network socket, fails, however deep in its
processes it does (tests/fastguard.py)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import fastguard
import tiers

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PROBE = "WEBARCHIVE_TIERS_PROBE"


def _item(function, module="test_x.py", fixtures=()):
    """What ``tiers.markers_of`` reads of a pytest item."""
    return SimpleNamespace(fspath=TESTS / module, fixturenames=list(fixtures), function=function)


# Tests to be marked, as if in a test module (compiled here: a test that named the helpers
# that start servers would be marked itself; never run, so they need not import them)
EXAMPLES = """
def plain():
    return len("no server")

def serves(directory):
    with rangeserver.serving(directory):
        pass

def indirectly():
    serves("/nonexistent")

def with_s3():
    return s3server.running()

def through_a_fixture(s3):  # a fixture of a helper module, running its server by a bare name
    return s3
"""
# a helper module's fixture, as if in tests/s3server.py
FIXTURE = """
def s3():
    with running():
        yield

def running():
    pass
"""


def test_a_test_is_marked_by_what_it_uses():
    examples = {}
    exec(compile(EXAMPLES, str(TESTS / "examples.py"), "exec"), examples)
    marked = {name: tiers.markers_of(_item(examples[name]))
              for name in ("plain", "serves", "indirectly", "with_s3")}
    assert marked == {"plain": set(), "serves": {"server"}, "indirectly": {"server"},
                      "with_s3": {"server"}}
    plain = examples["plain"]
    assert tiers.markers_of(_item(plain, fixtures=["tmp_path", "spark"])) == {"spark"}
    helper = {}
    exec(compile(FIXTURE, str(TESTS / "s3server.py"), "exec"), helper)
    item = _item(examples["through_a_fixture"], fixtures=["s3"])
    item._fixtureinfo = SimpleNamespace(name2fixturedefs={"s3": [SimpleNamespace(func=helper["s3"])]})
    assert tiers.markers_of(item) == {"server"}
    assert tiers.markers_of(_item(plain, module="test_real_hadoop.py")) == {"hadoop"}
    heavy = _item(plain, module="test_query.py")
    heavy.originalname = "test_lookup_range_arbitrary_keys"
    assert tiers.markers_of(heavy) == {"slow"}


def _pytest(*args, env=None):
    """pytest run on its own, unguarded (as from a shell, not from the fast tier)."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=fastguard.unguarded(env or os.environ))


def test_the_fast_tier_leaves_out_the_marked_tests():
    done = _pytest("--fast", "--collect-only", "-q", "tests/test_seqfile.py",
                   "tests/test_layers.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tests/test_layers.py::test_no_import_cycles" in done.stdout
    assert "tests/test_seqfile.py::test_hadoop_reads_our_file" not in done.stdout  # spark
    assert "deselected" in done.stdout
    everything = _pytest("--collect-only", "-q", "tests/test_seqfile.py")
    assert "tests/test_seqfile.py::test_hadoop_reads_our_file" in everything.stdout


def test_the_guard_refuses_what_the_fast_tier_leaves_out(tmp_path):
    """In a guarded process and in the processes it starts: no listening on a network
    socket, no Java, no browser; a local socket, binding (urllib3 probes IPv6 so) and other
    programs are fine; and what a guarded process loads is what it did."""
    log = tmp_path / "refused.log"
    base = fastguard.unguarded(os.environ)
    env = {**base, **fastguard.environment(tmp_path / "guard", log, base)}
    script = textwrap.dedent(f"""
        import sys
        assert "fastguard" in sys.modules
        assert "socket" not in sys.modules and "subprocess" not in sys.modules
        import fastguard, socket, subprocess
        def refused(do):
            try:
                do()
            except fastguard.Refused:
                return True
            return False
        tcp = socket.socket()
        tcp.bind(("127.0.0.1", 0))
        assert refused(tcp.listen)
        local = socket.socket(socket.AF_UNIX)
        local.bind({str(tmp_path / "sock")!r})
        local.listen()
        assert refused(lambda: subprocess.Popen(["java", "-version"]))
        assert refused(lambda: subprocess.run("/usr/bin/chromium --headless", shell=True))
        assert subprocess.run(["true"]).returncode == 0
        child = subprocess.run([sys.executable, "-c", "import socket; s = socket.socket(); "
                                "s.bind(('127.0.0.1', 0)); s.listen()"])
        assert child.returncode == 1
    """)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    refused = log.read_text().splitlines()
    assert len(refused) == 4, refused
    assert "the fast tier runs no server: listening on ('127.0.0.1', " in refused[0]
    assert "runs no spark: starting java" in refused[1]
    assert "runs no browser: starting chromium" in refused[2]
    assert "runs no server" in refused[3]  # the child's, guarded too


@pytest.mark.skipif(not os.environ.get(PROBE), reason="run by the test below only")
def test_probe_listening_in_a_child():
    """Unmarked, it starts a Python process that listens on a network socket."""
    subprocess.run([sys.executable, "-c", "import socket; s = socket.socket(); "
                    "s.bind(('127.0.0.1', 0)); s.listen()"])


def test_an_unmarked_test_that_listens_fails_the_fast_tier():
    """The guard fails the test, though only a process it started listened (and that
    process's failure went unchecked); without --fast the same test passes."""
    env = {**os.environ, PROBE: "1"}
    probe = "tests/test_tiers.py::test_probe_listening_in_a_child"
    fast = _pytest("--fast", "-q", probe, env=env)
    assert fast.returncode == 1, fast.stdout
    assert "the fast tier runs no server: listening on" in fast.stdout
    assert "mark the test 'server' (tests/tiers.py)" in fast.stdout
    assert _pytest("-q", probe, env=env).returncode == 0
