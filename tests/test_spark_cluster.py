"""The Spark engine on a standalone Spark cluster, really distributed: a master and two
workers on 127.0.0.1, each a JVM of its own started with pyspark's own ``spark-class``;
``build --runner spark --spark-master spark://...`` and ``spark-submit
jobs/spark_build.py`` on it build the local engine's cluster byte for byte, also when a
worker is killed during the cluster step. Marker ``cluster``."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from test_launchers import files_of
from webarchive_indexing.commands.corpus import make_corpus

pytestmark = pytest.mark.cluster

SPARK_BIN = Path(pyspark.__file__).parent / "bin"
START_TIMEOUT = 300


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Standalone:
    """A standalone master and ``workers`` workers (one core and 1 GB each: an executor's default memory)."""

    def __init__(self, directory, workers=2):
        self.dir = Path(directory)
        self.env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(self.dir),
                        PYSPARK_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1")
        port = free_port()
        self.url = f"spark://127.0.0.1:{port}"
        self.procs = {"master": self._start("master", "org.apache.spark.deploy.master.Master",
                                            "--host", "127.0.0.1", "--port", str(port),
                                            "--webui-port", str(free_port()))}
        self._wait("master", f"Starting Spark master at {self.url}")
        for i in range(workers):
            name = f"worker-{i}"
            self.procs[name] = self._start(name, "org.apache.spark.deploy.worker.Worker",
                                           "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                                           "--webui-port", str(free_port()),
                                           "--work-dir", str(self.dir / name), self.url)
            self._wait(name, "Successfully registered with master")

    def _start(self, name, cls, *args):
        log = open(self.dir / f"{name}.log", "wb")
        return subprocess.Popen([str(SPARK_BIN / "spark-class"), cls, *args], env=self.env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def log(self, name):
        return (self.dir / f"{name}.log").read_text(errors="replace")

    def _wait(self, name, line):
        deadline = time.monotonic() + START_TIMEOUT
        while line not in self.log(name):
            if self.procs[name].poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"spark {name} did not start: {self.log(name)[-3000:]}")
            time.sleep(1)

    def kill(self, name):
        os.killpg(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait()

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    cluster = Standalone(tmp_path_factory.mktemp("spark-standalone"))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-corpus")
    make_corpus(root / "seg-a", files=2, captures=60, seed=41)
    make_corpus(root / "seg-b", files=1, captures=60, seed=42, fmt="arc")
    return root


ARGS = ["--shards", "4", "--lines-per-block", "20", "--no-progress"]


@pytest.fixture(scope="module")
def local_build(corpus, tmp_path_factory):
    """The reference: the local engine's build of the same archives."""
    out = tmp_path_factory.mktemp("spark-reference") / "out"
    subprocess.run([sys.executable, "-m", "webarchive_indexing.cli", "build", str(corpus),
                    "-o", str(out), *ARGS], check=True, capture_output=True, timeout=600)
    return files_of(out / "cluster")


def cli_build(corpus, out, master, **popen):
    return subprocess.Popen([sys.executable, "-m", "webarchive_indexing.cli", "build", str(corpus),
                             "-o", str(out), *ARGS, "--runner", "spark", "--spark-master", master],
                            env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def test_build_on_a_standalone_cluster(standalone, corpus, local_build, tmp_path):
    started = time.monotonic()
    proc = cli_build(corpus, tmp_path / "out", standalone.url)
    said, _ = proc.communicate(timeout=900)
    print(f"standalone build: {time.monotonic() - started:.1f}s")
    assert proc.returncode == 0, said[-5000:]
    assert files_of(tmp_path / "out" / "cluster") == local_build
    # the work was done by executors on both workers
    for i in range(2):
        assert list((standalone.dir / f"worker-{i}").glob("app-*/*/stderr")), i


def test_spark_submit_on_a_standalone_cluster(standalone, corpus, local_build, tmp_path):
    done = subprocess.run([str(SPARK_BIN / "spark-submit"), "--master", standalone.url,
                           "--conf", "spark.ui.enabled=false",
                           str(Path(__file__).resolve().parents[1] / "jobs" / "spark_build.py"),
                           str(corpus), "-o", str(tmp_path / "out"), *ARGS],
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    assert files_of(tmp_path / "out" / "cluster") == local_build


def test_a_worker_killed_during_the_cluster_step(standalone, corpus, local_build, tmp_path):
    """SIGKILL to a worker (its JVM and its executor) as the cluster step starts: Spark runs
    the lost tasks again on the other worker, and the cluster is the same. Last in the
    module: the cluster has one worker after it."""
    proc = cli_build(corpus, tmp_path / "out", standalone.url)
    said = []
    for line in proc.stdout:
        said.append(line)
        if line.startswith("[3/3] writing"):
            assert proc.poll() is None
            standalone.kill("worker-1")
            break
    rest, _ = proc.communicate(timeout=900)
    said = "".join(said) + rest
    assert proc.returncode == 0, said[-5000:]
    assert files_of(tmp_path / "out" / "cluster") == local_build
    assert "Removing worker worker-" in standalone.log("master")
