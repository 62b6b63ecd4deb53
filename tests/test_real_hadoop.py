"""The launchers on real Apache Hadoop (scripts/hadoop-local: the jars from Maven Central
and the ``hadoop`` command over them), with mrjob's hadoop runner (``-r hadoop``):

* on Hadoop's local job runner (no HADOOP_CONF_DIR: Hadoop's defaults), with file:// paths;
* on a pseudo-distributed Hadoop on 127.0.0.1 (HDFS + YARN, tests/hadoop_local.py): the
  inputs, CDX files, split points and the cluster on hdfs://, the tasks in YARN containers.

Each run's cluster is byte-identical to `webarchive-index build`'s of the same archives.
"""
import os
import subprocess
import sys
import time

import pytest

import hadoop_local
from test_launchers import (PER_BLOCK, SHARDS, cluster_of_build, files_of, run, script_env,
                            settings, write_env)
from test_launchers import built, corpus  # noqa: F401  (fixtures)

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def hadoop_lib():
    return hadoop_local.fetch()


def test_hadoop_command_runs_hadoops_main_classes(hadoop_lib, tmp_path):
    env = hadoop_local.hadoop_env(os.environ)
    version = subprocess.run(["hadoop", "version"], env=env, capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("Hadoop 3.4.")
    assert str(hadoop_lib / "hadoop-common-3.4.") in version.stdout  # VersionInfo: the jar it ran
    (tmp_path / "a").write_bytes(b"x\ty\n")
    listing = subprocess.run(["hadoop", "fs", "-ls", f"file://{tmp_path}"], env=env,
                             capture_output=True, text=True)
    assert listing.returncode == 0 and f"file://{tmp_path}/a" in listing.stdout
    absent = subprocess.run(["hadoop", "fs", "-cat", f"file://{tmp_path}/b"], env=env,
                            capture_output=True, text=True)
    assert absent.returncode == 1 and "No such file or directory" in absent.stderr
    unknown = subprocess.run(["hadoop", "frobnicate"], env=env, capture_output=True, text=True)
    assert unknown.returncode == 1 and "unknown subcommand 'frobnicate'" in unknown.stderr


@pytest.fixture(scope="module")
def local_runner_run(tmp_path_factory, corpus, hadoop_lib):
    """runall.sh -r hadoop on Hadoop's local job runner: its default file system is file:///,
    where the directories' local paths are."""
    base = tmp_path_factory.mktemp("local-job-runner")
    env_file = write_env(base / "env.sh", **settings(
        base, corpus, RUNNER="hadoop",
        # mrjob's default tmp dir is hdfs:///user/$USER/tmp/mrjob: no HDFS without a cluster
        EXTRA_ARGS=["--hadoop-streaming-jar", hadoop_local.streaming_jar(hadoop_lib),
                    "--hadoop-tmp-dir", f"file://{base}/mrjob-tmp"]))
    started = time.monotonic()
    result = run("runall.sh", hadoop_local.hadoop_env(script_env(env_file)), cwd=base)
    return {"base": base, "result": result, "seconds": time.monotonic() - started}


def test_local_job_runner_builds_what_build_builds(local_runner_run, built):
    result, base = local_runner_run["result"], local_runner_run["base"]
    assert result.returncode == 0, result.stderr[-5000:]
    assert files_of(base / "cdx") == files_of(built / "cdx")
    for name in ("splits.txt", "splits.seq", "partitions.seq"):
        assert (base / "splits" / name).read_bytes() == (built / name).read_bytes()
    assert files_of(base / "cluster") == cluster_of_build(built)
