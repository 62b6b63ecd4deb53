"""A Spark build whose JVM dies says so in one line, and publishes nothing.

The driver's JVM (started by pyspark for ``build --runner spark``) is killed with SIGKILL
as a step begins, as the kernel's OOM killer would; py4j then reports a lost socket
("Connection refused", "PythonRDD does not exist in the JVM"), which must not be what the
user reads.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# runs the CLI with the step's function wrapped: the JVM is killed before the step's work
DRIVER = """
import os, signal, sys
from webarchive_indexing import cli
from webarchive_indexing.engines import spark_engine
step = getattr(spark_engine, sys.argv[1])
def dying(sc, *args, **kwargs):
    os.kill(sc._gateway.proc.pid, signal.SIGKILL)
    return step(sc, *args, **kwargs)
setattr(spark_engine, sys.argv[1], dying)
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("function, step", [("sample_splits", "sample"),
                                            ("write_cluster", "cluster")])
def test_a_killed_spark_jvm_is_named_and_nothing_is_published(tmp_path, function, step):
    out = tmp_path / "out"
    samples = os.path.join(ROOT, "samples")
    first = subprocess.run([sys.executable, "-m", "webarchive_indexing.cli", "build", samples,
                            "-o", str(out), "--shards", "2", "--no-progress"],
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    index = (out / "cluster" / "cluster.idx").read_bytes()
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    args = ["build", samples, "-o", str(out), "--shards", "2", "--no-progress",
            "--runner", "spark", "--no-skip-existing"]
    if step == "cluster":  # the sample step is skipped with the split points given
        args += ["--splits", str(out / "splits.txt")]
    done = subprocess.run([sys.executable, str(driver), function, *args],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("webarchive-index: nothing was published: Spark's JVM (pid "), last
    assert f"was killed by SIGKILL during the {step} step" in last, last
    assert "Traceback" not in done.stderr and "Connection refused" not in done.stderr
    assert "Exception while sending command" not in done.stderr
    # the cluster published before is untouched
    assert (out / "cluster" / "cluster.idx").read_bytes() == index
