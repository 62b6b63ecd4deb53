"""Shared fixtures: a Spark context (Hadoop's own SequenceFile reader, the Spark build) for the
whole session; the test tiers (``--fast``: tests/tiers.py)."""
import os
import pathlib
import shutil
import sys
import tempfile

import pyspark
import pytest

import fastguard
import tiers

import webarchive_indexing.util.compat


@pytest.fixture(scope="session")
def spark():
    # Python workers (test_spark.py's tasks) must run this interpreter, which has the package
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = (pyspark.SparkConf().set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false"))
    # two cores: test_spark.py runs the Spark build on local[2]; one context per process
    sc = pyspark.SparkContext("local[2]", "webarchive-indexing-tests", conf=conf)
    sc.setLogLevel("ERROR")
    yield sc
    sc.stop()


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true", default=False,
                     help="the fast tier (make test-fast): the tests without a marker of "
                          f"{', '.join(tiers.HEAVY)}; what those do fails a test (tests/tiers.py)")


def pytest_configure(config):
    if config.getoption("fast"):
        config.fast_tier_dir = tempfile.mkdtemp(prefix="webarchive-fast-tier-")
        config.fast_tier_log = os.path.join(config.fast_tier_dir, "refused.log")
        os.environ.update(fastguard.environment(config.fast_tier_dir, config.fast_tier_log,
                                                os.environ))
        fastguard.install()


def pytest_unconfigure(config):
    if hasattr(config, "fast_tier_dir"):
        shutil.rmtree(config.fast_tier_dir, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    for item in items:
        for marker in sorted(tiers.markers_of(item)):
            item.add_marker(marker)
    if config.getoption("fast"):
        fast = [item for item in items if not any(map(item.get_closest_marker, tiers.HEAVY))]
        if len(fast) < len(items):
            kept = set(fast)
            config.hook.pytest_deselected(items=[item for item in items if item not in kept])
            items[:] = fast
    if os.environ.get("PYTEST_XDIST_WORKER"):  # units of work in the order they are sent
        items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in SHARING)


# The session fixture too dear to start in two processes (a minute of both cores): under
# pytest-xdist (make test: -n auto) the modules that use it are one unit of work, sent
# first, so that one worker starts it once and its long tests do not come last; every other
# module is a unit of its own (its module fixtures start once)
SHARED = "hadoop_cluster"
SHARING = sorted(f"tests/{path.name}" for path in pathlib.Path(__file__).parent.glob("test_*.py")
                 if SHARED in path.read_text(encoding="utf-8"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            return SHARED if module in SHARING else module

    return ByModule(config, log)


@pytest.fixture(autouse=True)
def _fast_tier(request):
    """In the fast tier: fail a test that started what the tier leaves out."""
    yield
    log = getattr(request.config, "fast_tier_log", None)
    refused = fastguard.refused(log) if log else []
    if refused:
        pytest.fail("\n".join(refused), pytrace=False)


@pytest.fixture(scope="session")
def hadoop_lib():
    """Real Apache Hadoop's jars (tests/hadoop_local.py: fetched once, then reused)."""
    import hadoop_local
    return hadoop_local.fetch()


@pytest.fixture(scope="session")
def hadoop_cluster(tmp_path_factory, hadoop_lib):
    """One pseudo-distributed Hadoop (HDFS + YARN on 127.0.0.1) for the session: a cold
    start costs a minute of both cores, so every module that needs one shares it, each
    below its own paths."""
    import hadoop_local
    started = hadoop_local.PseudoCluster(tmp_path_factory.mktemp("pseudo") / "cluster",
                                         hadoop_local.hadoop_env(os.environ))
    yield started
    started.stop()
