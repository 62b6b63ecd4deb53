"""Per-job times of the index, sample and cluster jobs on every engine, for one corpus, and
what Hadoop's own counters report against the build summary.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/hadoop_jobs.py                  # 4 archives x 1000 captures, 4 shards
    python bench/hadoop_jobs.py --files 2 --captures 200

The same archives (bench/run.py's cached corpus) and the same split points, in turn on:

1. **local**: `build` with the local engine (in this process, every core);
2. **spark**: `build --runner spark --spark-master spark://...` on a standalone Spark
   cluster, a master and two workers of one core on 127.0.0.1 (tests/test_spark_cluster.py);
   the Spark context starts in the index step;
3. **hadoop local**: scripts/runindexwarcs.sh, runsample.sh and runzipcluster.sh with
   `-r hadoop` on Hadoop's local job runner (no HADOOP_CONF_DIR, local paths), then
   `finalize`: real Apache Hadoop from scripts/hadoop-local (fetch.sh, once);
4. **hadoop yarn**: the same on a pseudo-distributed Hadoop (scripts/hadoop-local/
   pseudo-cluster.sh: HDFS and YARN on 127.0.0.1), archives, CDX files, split points and
   cluster on hdfs://, the tasks in YARN containers.

A job's time is its step's (local, spark) or its launcher's whole command (hadoop: mrjob
and the Hadoop client included). For the Hadoop jobs, the counters Hadoop printed (map
input records, reduce output records, and the index job's own) are set against the local
build's summary. Every cluster must equal the local engine's byte for byte, else the run
exits with status 1. Outputs go to bench/out/hadoop-jobs/ (replaced each run).
"""
import argparse
import gzip
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
import run  # noqa: E402  (bench/run.py: the cached corpus, the venv)

OUT = Path(run.OUT) / "hadoop-jobs"
STEPS = ("index", "sample", "write_cluster")
JOBS = (("index", "runindexwarcs.sh"), ("sample", "runsample.sh"), ("cluster", "runzipcluster.sh"))


def timed_build(corpus_dir, out, options):
    """`build` in this process, the engine's steps timed: ({job: seconds}, summary)."""
    from webarchive_indexing.commands.build import build
    from webarchive_indexing.engines import local_engine, spark_engine
    times, originals = {}, {}

    def timing(cls, name):
        method = getattr(cls, name)

        def timed(self, *args, **kwargs):
            started = time.monotonic()
            try:
                return method(self, *args, **kwargs)
            finally:
                times[name.replace("write_", "")] = time.monotonic() - started
        return timed

    for cls in (local_engine.LocalEngine, spark_engine.SparkEngine):
        for name in STEPS:
            if name in vars(cls):
                originals[cls, name] = vars(cls)[name]
                setattr(cls, name, timing(cls, name))
    try:
        started = time.monotonic()
        summary = build([str(corpus_dir)], str(out), options)
        times["total"] = time.monotonic() - started
    finally:
        for (cls, name), method in originals.items():
            setattr(cls, name, method)
    return times, summary


def launchers(base, corpus_dir, archives, shards, per_block, env, fs=None):
    """The three launchers and finalize, on the local job runner (``fs`` None) or on the
    pseudo-cluster's HDFS ``fs``: ({job: seconds}, {job: {counter: value}}, cluster dir)."""
    import hadoop_local
    from test_launchers import PYTHON_BIN, REPO, run as run_script, script_env, settings, write_env
    from test_real_hadoop import counters
    jar = hadoop_local.streaming_jar(hadoop_local.fetch())
    base.mkdir(parents=True)
    if fs:
        subprocess.run([str(hadoop_local.HADOOP), "fs", "-put", str(corpus_dir), f"{fs}/warcs"],
                       env=env, check=True, capture_output=True)
        names = [f"{fs}/warcs/{Path(a).relative_to(corpus_dir)}" for a in archives]
        places = dict(INPUT_ROOT=f"{fs}/warcs/", CDX_DIR=f"{fs}/idx/cdx",
                      SPLITS_DIR=f"{fs}/idx/splits", CLUSTER_DIR=f"{fs}/idx/cluster")
        extra = ["--python-bin", str(Path(PYTHON_BIN) / "python3")]
    else:
        names, places = archives, dict(INPUT_ROOT=corpus_dir)
        extra = ["--hadoop-tmp-dir", f"file://{base}/mrjob-tmp"]
    manifest = base / "warcs.txt"
    manifest.write_text("".join(f"{name}\n" for name in names))
    values = settings(base, {"manifest": manifest, "root": corpus_dir}, RUNNER="hadoop",
                      SHARDS=shards, LINES_PER_BLOCK=per_block,
                      EXTRA_ARGS=["--hadoop-streaming-jar", jar, *extra], **places)
    env = script_env(write_env(base / "env.sh", **values), **{k: v for k, v in env.items()
                                                              if k.startswith("HADOOP_")})
    env["PATH"] = f"{hadoop_local.BIN}{os.pathsep}{env['PATH']}"
    times, found = {}, {}
    for job, script in JOBS:
        started = time.monotonic()
        result = run_script(script, env, cwd=base)
        times[job] = time.monotonic() - started
        if result.returncode:
            sys.exit(f"{script} failed ({result.returncode}):\n{result.stderr[-3000:]}")
        found[job] = {name: (counters(result.stderr, name) or [None])[-1] for name in
                      ("Map input records", "Reduce output records", "Launched map tasks",
                       "Launched reduce tasks", "archives indexed", "records", "cdx lines")}
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "webarchive_indexing.cli", "finalize",
                    str(values["CLUSTER_DIR"]), "--shards", str(shards)],
                   env=env, check=True, capture_output=True, cwd=REPO)
    times["finalize"] = time.monotonic() - started
    times["total"] = sum(times.values())
    cluster = Path(values["CLUSTER_DIR"])
    if fs:
        subprocess.run([str(hadoop_local.HADOOP), "fs", "-get", values["CLUSTER_DIR"],
                        str(base / "got")], env=env, check=True, capture_output=True)
        cluster = base / "got"
    return times, found, cluster


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--captures", type=int, default=1000)
    parser.add_argument("--mean-kb", type=float, default=20)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--lines-per-block", type=int, default=100)
    args = parser.parse_args(argv)

    import hadoop_local
    from test_launchers import cluster_of_build, files_of
    from test_spark_cluster import Standalone
    from webarchive_indexing.options import BuildOptions

    archives = run.corpus(args.files, args.captures, args.mean_kb)
    corpus_dir = Path(archives[0]).parent
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    load_start = os.getloadavg()
    common = dict(shards=args.shards, lines_per_block=args.lines_per_block, progress=False)
    print(f"{len(archives)} archives ({run.total_mb(archives):.1f} MB), {args.shards} shards",
          flush=True)

    times = {}
    times["local"], summary = timed_build(corpus_dir, OUT / "local",
                                          BuildOptions(runner="local", **common))
    reference = cluster_of_build(OUT / "local")
    lines = sum(len(gzip.decompress(p.read_bytes()).splitlines())
                for p in (OUT / "local" / "cdx").rglob("*.cdx.gz"))
    print(f"local: {summary.archives} archives, {summary.records} records, {summary.lines} "
          f"CDX lines, {summary.shards} shards", flush=True)
    same = {}

    (OUT / "spark").mkdir()
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python, with the package
    spark = Standalone(OUT / "spark")
    try:
        times["spark"], _ = timed_build(corpus_dir, OUT / "spark" / "out", BuildOptions(
            runner="spark", spark_master=spark.url, **common))
    finally:
        spark.stop()
    same["spark"] = cluster_of_build(OUT / "spark" / "out") == reference

    found = {}
    env = hadoop_local.hadoop_env(os.environ)
    times["hadoop local"], found["hadoop local"], cluster = launchers(
        OUT / "hadoop-local", corpus_dir, archives, args.shards, args.lines_per_block, env)
    same["hadoop local"] = files_of(cluster) == reference

    (OUT / "pseudo").mkdir()
    pseudo = hadoop_local.PseudoCluster(OUT / "pseudo" / "cluster", env)
    try:
        env = hadoop_local.hadoop_env(os.environ, pseudo.conf)
        times["hadoop yarn"], found["hadoop yarn"], cluster = launchers(
            OUT / "hadoop-yarn", corpus_dir, archives, args.shards, args.lines_per_block, env,
            fs=pseudo.fs)
    finally:
        pseudo.stop()
    same["hadoop yarn"] = files_of(cluster) == reference

    print(f"\nload average at start {load_start[0]:.1f}, at end {os.getloadavg()[0]:.1f} "
          f"({os.cpu_count()} cores)\n")
    print("| job | " + " | ".join(times) + " |")
    print("|---|" + "---:|" * len(times))
    for job in ("index", "sample", "cluster", "finalize", "total"):
        print(f"| {job} | " + " | ".join(f"{t[job]:.1f} s" if job in t else "-"
                                          for t in times.values()) + " |")
    metas = len(archives)  # a CDX file's .meta.json, read by the sample and cluster jobs too
    expected = {"index": {"Map input records": summary.archives,
                          "archives indexed": summary.archives, "records": summary.records,
                          "cdx lines": summary.lines, "Reduce output records": None},
                "sample": {"Map input records": lines + metas, "Reduce output records": None},
                "cluster": {"Map input records": lines + metas,
                            "Reduce output records": summary.shards}}
    print("\n| Hadoop counter | job | ours (build summary) | " + " | ".join(found) + " |")
    print("|---|---|---:|" + "---:|" * len(found))
    for job, counts in expected.items():
        for name, ours in counts.items():
            print(f"| {name} | {job} | {'-' if ours is None else ours} | "
                  + " | ".join("-" if f[job][name] is None else str(f[job][name])
                               for f in found.values()) + " |")
    for place in (p for p in found if found[p]["index"]["Launched map tasks"]):
        print(f"{place}: map tasks {[f['Launched map tasks'] for f in found[place].values()]}, "
              f"reduce tasks {[f['Launched reduce tasks'] for f in found[place].values()]}")
    print("\nclusters byte-identical to the local engine's: "
          + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    if os.path.realpath(sys.prefix) != os.path.realpath(run.VENV) and os.path.exists(run.PYTHON):
        os.execv(run.PYTHON, [run.PYTHON, *sys.argv])
    sys.exit(main())
