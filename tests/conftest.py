"""Shared fixtures: a Spark context (Hadoop's own SequenceFile reader, the Spark build) for the
whole session; the test tiers (``--fast``: tests/tiers.py)."""
import os
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


# first: pytest-xdist reads the groups in its own hook, after this one
@pytest.hookimpl(tryfirst=True)
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
    if getattr(config.option, "dist", "no") != "no":
        _in_groups(items)


# The session fixtures too dear to start in two processes: under pytest-xdist (make test:
# -n auto --dist loadgroup) the modules using one go to the same worker, first
SHARED = ("hadoop_cluster",)


def _in_groups(items):
    """Each test in the group of its module (its module fixtures start once), or of the
    session fixture of SHARED its module uses, those groups first: the longest start first."""
    modules = {}
    for item in items:
        shared = [name for name in SHARED if name in item.fixturenames]
        modules.setdefault(item.module.__name__, set()).update(shared)
    for item in items:
        shared = sorted(modules[item.module.__name__])
        item.add_marker(pytest.mark.xdist_group(shared[0] if shared else item.module.__name__))
    items.sort(key=lambda item: not modules[item.module.__name__])


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
