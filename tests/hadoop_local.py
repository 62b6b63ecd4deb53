"""Real Apache Hadoop for the tests, from scripts/hadoop-local: the jars fetched from Maven
Central (fetch.sh, once; later runs reuse them), its ``hadoop`` command, and a
pseudo-distributed cluster (HDFS + YARN on 127.0.0.1, pseudo-cluster.sh) for a module."""
import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HADOOP_LOCAL = REPO / "scripts" / "hadoop-local"
BIN = HADOOP_LOCAL / "bin"
HADOOP = BIN / "hadoop"
# A cold start on two busy cores: the JVM, then NameNode, DataNode, RM, NM, history server
CLUSTER_START_TIMEOUT = 600


def fetch():
    """fetch.sh (a no-op once done); the directory of the jars."""
    subprocess.run([str(HADOOP_LOCAL / "fetch.sh")], check=True, timeout=1800)
    home = subprocess.run(["bash", "-c", f'source "{HADOOP_LOCAL}/home.sh"; echo "$HADOOP_LOCAL_HOME"'],
                          check=True, capture_output=True, text=True).stdout.strip()
    return Path(home) / "lib"


def streaming_jar(lib):
    (jar,) = glob.glob(str(lib / "hadoop-streaming-*.jar"))
    return jar


def hadoop_env(base_env, conf_dir=None):
    """``base_env`` with the ``hadoop`` command first on PATH and HADOOP_CONF_DIR and
    HADOOP_LOG_DIR set (a pseudo-cluster's: mrjob finds the tasks' logs in the latter) or
    unset (Hadoop's defaults: file:/// and the local job runner)."""
    env = {k: v for k, v in base_env.items()
           if k not in ("HADOOP_CONF_DIR", "HADOOP_LOG_DIR", "HADOOP_BIN")}
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    if conf_dir:
        env["HADOOP_CONF_DIR"] = str(conf_dir)
        env["HADOOP_LOG_DIR"] = str(Path(conf_dir).parent / "logs")
    return env


def recording(directory, log):
    """``directory/hadoop``: the real ``hadoop`` command, which first appends its argv (a
    JSON list) to ``log``; put ``directory`` first on PATH to see what mrjob ran."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "hadoop"
    script.write_text(f"""#!/bin/sh
"{sys.executable}" -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "{log}"
exec "{HADOOP}" "$@"
""")
    script.chmod(0o755)
    return directory


def calls(log):
    """The argv of every recorded ``hadoop`` call."""
    log = Path(log)
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


class PseudoCluster:
    """pseudo-cluster.sh in ``directory``, started with ``env`` (its tasks inherit PATH)."""

    def __init__(self, directory, env):
        self.dir = Path(directory)
        self.log = open(self.dir.parent / f"{self.dir.name}.log", "wb")
        self.proc = subprocess.Popen([str(HADOOP_LOCAL / "pseudo-cluster.sh"), str(self.dir)],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + CLUSTER_START_TIMEOUT
        while not (self.dir / "conf" / "ready").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"pseudo-cluster.sh did not start: {self.log_tail()}")
            time.sleep(2)
        self.conf = self.dir / "conf"
        core = (self.conf / "core-site.xml").read_text()
        self.fs = core.split("<name>fs.defaultFS</name><value>")[1].split("<")[0]

    def log_tail(self, chars=5000):
        self.log.flush()
        return (self.dir.parent / f"{self.dir.name}.log").read_text(errors="replace")[-chars:]

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
