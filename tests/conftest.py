"""Shared fixtures: a Spark context (Hadoop's own SequenceFile reader) for the whole session."""
import pyspark
import pytest

import webarchive_indexing.compat  # noqa: F401  (before any test imports mrjob: Python 3.13)


@pytest.fixture(scope="session")
def spark():
    conf = pyspark.SparkConf().set("spark.ui.enabled", "false")
    sc = pyspark.SparkContext("local[1]", "webarchive-indexing-tests", conf=conf)
    sc.setLogLevel("ERROR")
    yield sc
    sc.stop()
