"""Shared fixtures: a Spark context (Hadoop's own SequenceFile reader, the Spark build) for the whole session."""
import os
import sys

import pyspark
import pytest

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
