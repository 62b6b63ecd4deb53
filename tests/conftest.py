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
