"""The launchers on real Apache Hadoop (scripts/hadoop-local: the jars from Maven Central
and the ``hadoop`` command over them), with mrjob's hadoop runner (``-r hadoop``):

* on Hadoop's local job runner (no HADOOP_CONF_DIR: Hadoop's defaults), with file:// paths;
* on a pseudo-distributed Hadoop on 127.0.0.1 (HDFS + YARN, tests/hadoop_local.py): the
  inputs, CDX files, split points and the cluster on hdfs://, the tasks in YARN containers.

Each run's cluster is byte-identical to `webarchive-index build`'s of the same archives.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import hadoop_local
from helpers import REAL
from test_launchers import (COMBINE, NLINE, PYTHON_BIN, REPO, SHARDS, TOTAL_ORDER,
                            cluster_of_build, files_of, jobconf, option_values, run, script_env,
                            settings, write_env)
from test_launchers import Sent
from test_launchers import built, checkout, corpus, emr_runs  # noqa: F401  (fixtures)

pytestmark = pytest.mark.cluster


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


def test_fs_starts_from_its_archive_of_classes(hadoop_lib, tmp_path):
    """`hadoop fs` made its class-data archive on a call (of this test or before it), and
    later calls load FsShell's classes from it, whatever HADOOP_CONF_DIR they name."""
    env = hadoop_local.hadoop_env(os.environ)
    for _ in range(5):  # another call may be making it: it is there within seconds
        subprocess.run(["hadoop", "fs", "-ls", f"file://{tmp_path}"], env=env, check=True,
                       capture_output=True)
        if (hadoop_lib / "fs.jsa").exists():
            break
        time.sleep(2)
    assert (hadoop_lib / "fs.jsa").stat().st_size > 0
    conf = tmp_path / "conf"
    conf.mkdir()
    shutil.copy(hadoop_local.HADOOP_LOCAL / "conf" / "core-site.xml", conf)
    traced = subprocess.run(["hadoop", "fs", "-ls", f"file://{tmp_path}"], capture_output=True,
                            text=True, env={**env, "HADOOP_CONF_DIR": str(conf),
                                            "HADOOP_CLIENT_OPTS": "-Xlog:class+load=info"})
    assert traced.returncode == 0 and f"file://{tmp_path}/conf" in traced.stdout
    loaded = [line for line in traced.stdout.splitlines() if "source: " in line]
    shared = [line for line in loaded if "shared objects file" in line]
    assert "org.apache.hadoop.fs.FsShell source: shared objects file (top)" in traced.stdout
    assert len(shared) > 10 * (len(loaded) - len(shared))


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
    env = hadoop_local.hadoop_env(script_env(env_file))
    env["PATH"] = f"{hadoop_local.recording(base / 'bin', base / 'calls.jsonl')}{os.pathsep}{env['PATH']}"
    started = time.monotonic()
    result = run("runall.sh", env, cwd=base)
    calls = hadoop_local.calls(base / "calls.jsonl")
    jobs = {}
    for argv in calls:
        if argv[:1] == ["jar"]:
            mapper = argv[argv.index("-mapper") + 1]
            jobs[next(j for j in ("index_warcs", "sample_splits", "zip_cluster") if f"{j}.py" in mapper)] = argv
    return {"base": base, "result": result, "seconds": time.monotonic() - started, "calls": calls,
            "jobs": jobs, "jar": hadoop_local.streaming_jar(hadoop_lib)}


def test_local_job_runner_builds_what_build_builds(local_runner_run, built):
    result, base = local_runner_run["result"], local_runner_run["base"]
    assert result.returncode == 0, result.stderr[-5000:]
    assert files_of(base / "cdx") == files_of(built / "cdx")
    for name in ("splits.txt", "splits.seq", "partitions.seq"):
        assert (base / "splits" / name).read_bytes() == (built / name).read_bytes()
    assert files_of(base / "cluster") == cluster_of_build(built)
    print(f"\nlocal job runner runall.sh: {local_runner_run['seconds']:.0f}s")


# What mrjob ran on the local job runner: the streaming command lines

def test_local_job_runner_run_used_the_real_command(local_runner_run):
    assert sorted(local_runner_run["jobs"]) == ["index_warcs", "sample_splits", "zip_cluster"]
    assert ["version"] in local_runner_run["calls"]  # mrjob found `hadoop` on PATH itself
    for argv in local_runner_run["jobs"].values():
        assert argv[1] == local_runner_run["jar"]


def test_index_job_command_line(local_runner_run):
    argv = local_runner_run["jobs"]["index_warcs"]
    conf = jobconf(argv)
    assert option_values(argv, "-inputformat") == [NLINE]
    assert conf["mapreduce.input.lineinputformat.linespermap"] == "2"
    assert conf["mapreduce.map.speculative"] == "false"
    assert conf["mapreduce.task.timeout"] == "9600000"
    assert conf["mapreduce.job.reduces"] == "0" and "-reducer" not in argv
    # the local manifest went to mrjob's tmp dir and is the job's input
    (manifest_uri,) = option_values(argv, "-input")
    tmp = f"file://{local_runner_run['base']}/mrjob-tmp/"
    assert manifest_uri.startswith(tmp) and manifest_uri.endswith("/warcs.txt")
    mapper = argv[argv.index("-mapper") + 1]
    assert "python3.11 index_warcs.py --step-num=0 --mapper" in mapper  # python_bin of the sample conf
    assert "--input-root" in mapper and "--cdx-dir" in mapper


def test_sample_job_command_line(local_runner_run):
    argv = local_runner_run["jobs"]["sample_splits"]
    conf = jobconf(argv)
    assert option_values(argv, "-inputformat") == [COMBINE]
    assert conf["mapreduce.job.reduces"] == "1" and "-reducer" in argv
    assert conf["mapreduce.map.output.compress"] == "true"
    assert conf["mapreduce.output.fileoutputformat.compress"] == "false"
    assert conf["mapreduce.input.fileinputformat.split.maxsize"] == "50000000"
    assert conf["mapreduce.job.reduce.slowstart.completedmaps"] == "1.0"
    assert conf["mapreduce.task.timeout"] == "9600000"
    # added by the launcher: plain lines for the mapper, nested CDX directories read
    assert conf["stream.map.input.ignoreKey"] == "true"
    assert conf["mapreduce.input.fileinputformat.input.dir.recursive"] == "true"
    assert "-partitioner" not in argv


def test_cluster_job_command_line(local_runner_run):
    argv = local_runner_run["jobs"]["zip_cluster"]
    conf = jobconf(argv)
    assert option_values(argv, "-partitioner") == [TOTAL_ORDER]
    assert conf["mapreduce.job.reduces"] == str(SHARDS)
    assert option_values(argv, "-inputformat") == [COMBINE]
    (files,) = option_values(argv, "-files")
    shipped = dict(reversed(f.split("#", 1)) for f in files.split(","))
    assert set(shipped) >= {"_partition.lst", "splits.txt", "zip_cluster.py", "mrjob.zip"}
    # the files shipped are the sampler's: mrjob put them to its tmp dir under those names
    puts = {a[-1]: a[-2] for a in local_runner_run["calls"] if a[:2] == ["fs", "-put"]}
    assert puts[shipped["_partition.lst"]] == str(local_runner_run["base"] / "splits" / "partitions.seq")
    assert puts[shipped["splits.txt"]] == str(local_runner_run["base"] / "splits" / "splits.txt")
    assert conf["mapreduce.reduce.speculative"] == "false"
    assert conf["mapreduce.task.timeout"] == "9600000"
    assert conf["mapreduce.job.reduce.slowstart.completedmaps"] == "1.0"
    assert conf["mapreduce.output.fileoutputformat.compress"] == "false"
    assert conf["mapreduce.input.fileinputformat.split.maxsize"] == "50000000"
    # SORT_VALUES: key = shard number + line, values sorted by the framework
    assert conf["stream.num.map.output.key.fields"] == "2"
    assert conf["mapreduce.partition.keypartitioner.options"] == "-k1,1"
    assert conf["stream.map.input.ignoreKey"] == "true"
    # generic options (-files, -D) come before the streaming ones, as Hadoop requires
    assert max(i for i, a in enumerate(argv) if a in ("-D", "-files")) < argv.index("-partitioner")
    reducer = argv[argv.index("-reducer") + 1]
    assert "--partitions _partition.lst" in reducer and "--splits splits.txt" in reducer
    # read from the task's working directory by its absolute path (Hadoop 3.4's reader takes
    # a relative path, its default _partition.lst too, to be on HDFS)
    assert conf["mapreduce.totalorderpartitioner.path"] == "file://${user.dir}/_partition.lst"


def test_sampler_on_hadoop_needs_no_extra_jobconf(tmp_path, built, hadoop_lib):
    """sample_splits.py alone, without the launcher's jobconf, on the local job runner."""
    env = hadoop_local.hadoop_env(dict(os.environ, PATH=PYTHON_BIN + os.pathsep + os.environ["PATH"]))
    result = subprocess.run(
        [sys.executable, str(REPO / "jobs" / "sample_splits.py"), "-r", "hadoop", "--no-conf",
         "--hadoop-streaming-jar", hadoop_local.streaming_jar(hadoop_lib),
         "--hadoop-tmp-dir", f"file://{tmp_path}/mrjob-tmp", "--shards", str(SHARDS),
         "--splits-dir", str(tmp_path / "splits"), str(built / "cdx")],
        env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "splits" / "splits.txt").read_bytes() == (built / "splits.txt").read_bytes()


@pytest.fixture(scope="module")
def damaged(tmp_path_factory, corpus):
    """A manifest of two good archives and a damaged one (a .warc.gz cut short)."""
    base = tmp_path_factory.mktemp("damaged")
    bad = Path(REAL) / "chatnoir-eu+chatnoir-resiliparse__clipped.warc.gz"
    manifest = base / "warcs.txt"
    manifest.write_text(f"{corpus['archives'][0]}\n{bad}\n{corpus['archives'][1]}\n")
    return {"base": base, "manifest": manifest, "bad": bad}


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_damaged_archive_on_the_local_job_runner(damaged, corpus, hadoop_lib, on_error):
    """--on-error fail: the job fails, exit status 1, and what it printed names the archive;
    skip: the CDX files are written and the archive's problems reported."""
    base = damaged["base"] / on_error
    env_file = write_env(damaged["base"] / f"{on_error}.sh", **settings(
        base, corpus, RUNNER="hadoop", WARC_MANIFEST=damaged["manifest"], ON_ERROR=on_error,
        INPUT_ROOT=" ".join((str(corpus["root"]), str(damaged["bad"].parent))),
        EXTRA_ARGS=["--hadoop-streaming-jar", hadoop_local.streaming_jar(hadoop_lib),
                    "--hadoop-tmp-dir", f"file://{base}/mrjob-tmp"]))
    result = run("runindexwarcs.sh", hadoop_local.hadoop_env(script_env(env_file)), cwd=damaged["base"])
    name = damaged["bad"].name
    cdx = base / "cdx" / name.replace(".warc.gz", ".cdx.gz")
    if on_error == "fail":
        assert result.returncode == 1, result.stderr[-3000:]
        assert f"{damaged['bad']}: offset " in result.stderr
        assert not cdx.exists()
    else:
        assert result.returncode == 0, result.stderr[-3000:]
        statuses = {s["name"]: s for s in map(json.loads, result.stdout.splitlines())}
        assert statuses[name]["errors"] and statuses[name]["cdx"] == str(cdx) and cdx.exists()
        assert sum(1 for s in statuses.values() if not s["errors"]) == 2


# -- a pseudo-distributed Hadoop: HDFS + YARN on 127.0.0.1 -----------------------------------

def hadoop(cluster, *args, check=True):
    """``hadoop ARGS`` as a client of ``cluster``."""
    result = subprocess.run(["hadoop", *args], env=hadoop_local.hadoop_env(os.environ, cluster.conf),
                            capture_output=True, timeout=600)
    if check:
        assert result.returncode == 0, result.stderr.decode(errors="replace")[-3000:]
    return result


def counters(stderr, name):
    """The values of Hadoop's counter ``name`` in the jobs' reports, in job order."""
    return [int(line.split("=")[1]) for line in stderr.splitlines()
            if line.strip().startswith(name + "=")]


@pytest.fixture(scope="module")
def hdfs_run(tmp_path_factory, corpus, hadoop_cluster, hadoop_lib):
    """runall.sh -r hadoop on the pseudo-cluster: archives, manifest entries, CDX files, split
    points and cluster on hdfs://; the tasks in YARN containers."""
    base = tmp_path_factory.mktemp("hdfs-run")
    fs = hadoop_cluster.fs
    hadoop(hadoop_cluster, "fs", "-put", str(corpus["root"]), f"{fs}/warcs")
    manifest = base / "warcs.txt"
    manifest.write_text("".join(f"{fs}/warcs/{Path(a).relative_to(corpus['root'])}\n"
                                for a in corpus["archives"]))
    env_file = write_env(base / "env.sh", **settings(
        base, dict(corpus, manifest=manifest), RUNNER="hadoop", INPUT_ROOT=f"{fs}/warcs/",
        CDX_DIR=f"{fs}/idx/cdx", SPLITS_DIR=f"{fs}/idx/splits", CLUSTER_DIR=f"{fs}/idx/cluster",
        # a task's PATH is the cluster's (pseudo-cluster.sh: hadoop and the system's), not
        # the client's: the interpreter with the package is named by its path
        EXTRA_ARGS=["--hadoop-streaming-jar", hadoop_local.streaming_jar(hadoop_lib),
                    "--python-bin", str(Path(PYTHON_BIN) / "python3")]))
    started = time.monotonic()
    result = run("runall.sh", hadoop_local.hadoop_env(script_env(env_file), hadoop_cluster.conf), cwd=base)
    seconds = time.monotonic() - started
    if result.returncode == 0:
        hadoop(hadoop_cluster, "fs", "-get", f"{fs}/idx", str(base / "got"))
    return {"base": base, "result": result, "seconds": seconds, "fs": fs}


def without_source_times(files):
    """CDX files, and their .meta.json without the archive's modification time (the copy
    on HDFS is not the local file: its time is its upload's, and HDFS keeps milliseconds)."""
    out = {}
    for name, data in files.items():
        if name.endswith(".meta.json"):
            meta = json.loads(data)
            times = [meta["source"].pop(key) for key in ("mtime_ms", "mtime_ns") if key in meta["source"]]
            assert len(times) == 1, name
            data = meta
        out[name] = data
    return out


def test_pseudo_cluster_builds_what_build_builds(hdfs_run, built, corpus):
    result, got = hdfs_run["result"], hdfs_run["base"] / "got"
    assert result.returncode == 0, result.stderr[-5000:]
    assert "Running job: job_" in result.stderr  # on YARN, not the local job runner
    assert without_source_times(files_of(got / "cdx")) == without_source_times(files_of(built / "cdx"))
    for name in ("splits.txt", "splits.seq", "partitions.seq"):
        assert (got / "splits" / name).read_bytes() == (built / name).read_bytes()
    assert files_of(got / "cluster") == cluster_of_build(built)
    # index: 3 archives, 2 a map task; cluster: a reduce task a shard
    assert counters(result.stderr, "Launched map tasks")[0] == 2
    assert counters(result.stderr, "Launched reduce tasks")[-1] == SHARDS
    # Hadoop's own counters against ours: the index job read the 3 manifest lines and
    # reported 3 archives; the sample and cluster jobs read every CDX line, and also the
    # one line of each CDX file's .meta.json beside it (their input is CDX_DIR, read
    # recursively; the mappers drop what is not a CDX line); the cluster job's reducers
    # wrote one status a shard
    lines = sum(len(gzip.decompress(p.read_bytes()).splitlines()) for p in (built / "cdx").rglob("*.cdx.gz"))
    metas = len(list((got / "cdx").rglob("*.meta.json")))
    assert metas == len(corpus["archives"])
    assert counters(result.stderr, "Map input records") == [len(corpus["archives"]), lines + metas,
                                                            lines + metas]
    assert counters(result.stderr, "archives indexed") == [len(corpus["archives"])]
    assert counters(result.stderr, "cdx lines") == [lines]
    assert counters(result.stderr, "Reduce output records")[-1] == SHARDS
    print(f"\npseudo-distributed runall.sh: {hdfs_run['seconds']:.0f}s; Hadoop counters: "
          f"map input records {counters(result.stderr, 'Map input records')}, reduce output "
          f"records {counters(result.stderr, 'Reduce output records')}; CDX lines {lines}")


def test_hadoops_sequencefile_reader_reads_our_split_points(hdfs_run, hadoop_cluster, built):
    """`hadoop fs -text` reads a SequenceFile with Hadoop's own SequenceFile.Reader."""
    # the split lines; the partitioner's keys: the shard numbers the cluster job's mappers emit
    expected = {"splits.seq": (built / "splits.txt").read_bytes().splitlines(),
                "partitions.seq": [b"%05d" % shard for shard in range(1, SHARDS)]}
    for name, keys in expected.items():
        text = hadoop(hadoop_cluster, "fs", "-text", f"{hdfs_run['fs']}/idx/splits/{name}").stdout
        assert [line.split(b"\t")[0] for line in text.splitlines()] == keys
        assert len(keys) == SHARDS - 1


def test_query_answers_from_the_hdfs_cluster(hdfs_run, hadoop_cluster, built):
    env = hadoop_local.hadoop_env(os.environ, hadoop_cluster.conf)
    first = gzip.decompress(sorted((built / "cdx").rglob("*.cdx.gz"))[0].read_bytes()).splitlines()[0]
    host = urlsplit(json.loads(first.split(b" ", 2)[2])["url"]).hostname
    for pattern in (f"{host}/*", "*." + host.rsplit(".", 1)[-1]):
        remote = subprocess.run([sys.executable, "-m", "webarchive_indexing.cli", "query",
                                 f"{hdfs_run['fs']}/idx/cluster", pattern, "--limit", "7"],
                                env=env, capture_output=True, text=True, timeout=600)
        local = subprocess.run([sys.executable, "-m", "webarchive_indexing.cli", "query",
                                str(built), pattern, "--limit", "7"],
                               capture_output=True, text=True, timeout=600)
        assert remote.returncode == 0, remote.stderr[-3000:]
        assert remote.stdout == local.stdout and remote.stdout


def test_a_killed_reduce_attempt_is_retried(hdfs_run, hadoop_cluster, built, hadoop_lib, tmp_path):
    """The first attempt of reduce task 1 of the cluster job is killed (SIGKILL, with the
    task's Python) a moment after it starts; YARN runs a second attempt, and the published
    cluster is still `build`'s, byte for byte, with nothing else in it."""
    assert hdfs_run["result"].returncode == 0
    fs, python = hdfs_run["fs"], Path(PYTHON_BIN) / "python3"
    killed = tmp_path / "killed"
    wrapper = tmp_path / "python-killing-one-attempt"
    wrapper.write_text(f"""#!/bin/sh
case "$mapreduce_task_attempt_id $*" in
    *_r_000001_0\\ *zip_cluster.py*--reducer*)
        echo "$mapreduce_task_attempt_id" > {killed}
        "{python}" "$@" & sleep 3; kill -9 $! $$ ;;
esac
exec "{python}" "$@"
""")
    wrapper.chmod(0o755)
    env_file = write_env(tmp_path / "env.sh", **settings(
        tmp_path, {"manifest": "unused", "root": "unused"}, RUNNER="hadoop",
        CDX_DIR=f"{fs}/idx/cdx", SPLITS_DIR=f"{fs}/idx/splits", CLUSTER_DIR=f"{fs}/retried",
        EXTRA_ARGS=["--hadoop-streaming-jar", hadoop_local.streaming_jar(hadoop_lib),
                    "--python-bin", str(wrapper)]))
    env = hadoop_local.hadoop_env(script_env(env_file), hadoop_cluster.conf)
    result = run("runzipcluster.sh", env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-5000:]
    assert killed.read_text().strip().endswith("_r_000001_0")
    # Hadoop counts the attempt that died, and launched one more reduce attempt than shards
    assert counters(result.stderr, "Failed reduce tasks") == [1]
    assert counters(result.stderr, "Launched reduce tasks") == [SHARDS + 1]
    finalize = subprocess.run([sys.executable, "-m", "webarchive_indexing.cli", "finalize",
                               f"{fs}/retried", "--shards", str(SHARDS)],
                              env=env, capture_output=True, text=True, timeout=900)
    assert finalize.returncode == 0, finalize.stderr[-3000:]
    hadoop(hadoop_cluster, "fs", "-get", f"{fs}/retried", str(tmp_path / "got"))
    assert files_of(tmp_path / "got") == cluster_of_build(built)


@pytest.fixture(scope="module")
def damaged_on_hdfs(damaged, corpus, hadoop_cluster):
    """The damaged manifest's archives on HDFS, and a manifest naming them there."""
    top = f"{hadoop_cluster.fs}/damaged"
    archives = [corpus["archives"][0], damaged["bad"], corpus["archives"][1]]
    hadoop(hadoop_cluster, "fs", "-mkdir", "-p", f"{top}/in")
    hadoop(hadoop_cluster, "fs", "-put", *map(str, archives), f"{top}/in")
    manifest = damaged["base"] / "on-hdfs.txt"
    manifest.write_text("".join(f"{top}/in/{Path(a).name}\n" for a in archives))
    return {"top": top, "manifest": manifest, "bad": f"{top}/in/{damaged['bad'].name}"}


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_damaged_archive_on_yarn(damaged_on_hdfs, damaged, corpus, hadoop_cluster, hadoop_lib,
                                 on_error):
    """As on the local job runner, with the archives and CDX files on HDFS and the tasks in
    YARN containers. fail: each attempt of the bad archive's task fails, then the job, exit
    status 1; each attempt's stderr, in HADOOP_LOG_DIR/userlogs where mrjob looks for the
    cause, names the archive. skip: the CDX files are written and the archive's problems
    reported."""
    base, top = damaged["base"] / f"yarn-{on_error}", damaged_on_hdfs["top"]
    cdx_dir = f"{top}/cdx-{on_error}"
    env_file = write_env(damaged["base"] / f"yarn-{on_error}.sh", **settings(
        base, corpus, RUNNER="hadoop", WARC_MANIFEST=damaged_on_hdfs["manifest"],
        ON_ERROR=on_error, INPUT_ROOT=f"{top}/in/", CDX_DIR=cdx_dir,
        # two attempts, not Hadoop's four: a retry is seen failing too, in half the time
        EXTRA_ARGS=["--hadoop-streaming-jar", hadoop_local.streaming_jar(hadoop_lib),
                    "--python-bin", str(Path(PYTHON_BIN) / "python3"),
                    "--jobconf", "mapreduce.map.maxattempts=2"]))
    result = run("runindexwarcs.sh", hadoop_local.hadoop_env(script_env(env_file), hadoop_cluster.conf),
                 cwd=damaged["base"])
    assert "Running job: job_" in result.stderr  # on YARN, not the local job runner
    name = damaged["bad"].name
    cdx = f"{cdx_dir}/{name.replace('.warc.gz', '.cdx.gz')}"
    listing = hadoop(hadoop_cluster, "fs", "-ls", "-R", top, check=False).stdout.decode()
    published = [line.split()[-1] for line in listing.splitlines() if line.startswith("-")]
    if on_error == "fail":
        assert result.returncode == 1, result.stderr[-3000:]
        assert counters(result.stderr, "Failed map tasks") == [2]
        # the failed attempts' stderr, where mrjob looked for it
        app = re.search(r"application_\d+_\d+", result.stderr).group(0)
        logs = hadoop_cluster.dir / "logs" / "userlogs" / app
        assert f"Looking for task syslogs in {logs}" in result.stderr
        stderrs = "".join(p.read_text(errors="replace") for p in logs.glob("container_*/stderr"))
        assert stderrs.count(f"{damaged_on_hdfs['bad']}: offset 0: gzip member is truncated") == 2
        assert cdx not in published
    else:
        assert result.returncode == 0, result.stderr[-3000:]
        statuses = {s["name"]: s for s in map(json.loads, result.stdout.splitlines())}
        assert statuses[name]["errors"] and statuses[name]["cdx"] == cdx and cdx in published
        assert sum(1 for s in statuses.values() if not s["errors"]) == 2


def streaming_options(argv):
    """What a streaming command line asks of Hadoop, less where its files are: the options
    in order, the jobconf, the input format and partitioner, and the task commands' own
    option names."""
    def option_names(command):
        return [word for word in command.split() if word.startswith("--")]
    return {"options": [a for a in argv if a.startswith("-") and not a.startswith("--")],
            "jobconf": jobconf(argv),
            "classes": (option_values(argv, "-inputformat"), option_values(argv, "-partitioner")),
            "tasks": [option_names(argv[argv.index(o) + 1]) for o in ("-mapper", "-reducer") if o in argv]}


def test_emr_steps_are_the_command_lines_hadoop_ran(emr_runs, local_runner_run):
    """The EMR tests run nothing (moto), but the steps they submit ask Hadoop for what real
    Hadoop just ran: the same options, jobconf, input formats, partitioner and task options."""
    for script, job in (("runindexwarcs.sh", "index_warcs"), ("runsample.sh", "sample_splits"),
                        ("runzipcluster.sh", "zip_cluster")):
        step = Sent(emr_runs[script]["requests"]).step_args()
        ran = local_runner_run["jobs"][job][2:]  # less `jar JAR`
        assert streaming_options(step) == streaming_options(ran), job
