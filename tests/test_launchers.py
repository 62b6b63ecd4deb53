"""scripts/run*.sh, mrjob.conf.sample and bootstrap.sh, on every runner they support.

* settings: a missing or bad variable stops a script with exit status 2, naming it;
* inline: runall.sh builds the same cluster as ``webarchive-index build``, byte for byte;
* hadoop: in tests/test_real_hadoop.py, on real Hadoop;
* emr: mrjob's EMR runner against moto on 127.0.0.1 (tests/emr_moto.py), a whole cluster
  lifecycle per job: what is uploaded to S3 and what RunJobFlow/AddJobFlowSteps carry.
"""
import atexit
import io
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from emr_moto import MotoEMR, Requests, client_env, network_guard
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.commands.build import build
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.zipnum.layout import root_index

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"

def _python_bin():
    """A directory whose python3 and python3.11 (the sample mrjob.conf's python_bin, which
    Hadoop's tasks run) are this interpreter, whatever its version."""
    directory = Path(tempfile.mkdtemp(prefix="launcher-python-"))
    for name in ("python3", "python3.11"):
        # a script, not a symlink: a venv's interpreter finds its packages from its own path
        (directory / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        (directory / name).chmod(0o755)
    atexit.register(shutil.rmtree, directory, True)
    return str(directory)


PYTHON_BIN = _python_bin()
SHARDS, PER_BLOCK = 4, 20
REQUIRED = {
    "runindexwarcs.sh": ["WARC_MANIFEST", "CDX_DIR", "RUNNER", "MRJOB_CONF"],
    "runsample.sh": ["CDX_DIR", "SPLITS_DIR", "SHARDS", "RUNNER", "MRJOB_CONF"],
    "runzipcluster.sh": ["CDX_DIR", "SPLITS_DIR", "CLUSTER_DIR", "SHARDS", "LINES_PER_BLOCK",
                         "RUNNER", "MRJOB_CONF"],
    "runall.sh": ["WARC_MANIFEST", "CDX_DIR", "SPLITS_DIR", "CLUSTER_DIR", "SHARDS",
                  "LINES_PER_BLOCK", "RUNNER", "MRJOB_CONF"],
}
TOTAL_ORDER = "org.apache.hadoop.mapred.lib.TotalOrderPartitioner"
NLINE = "org.apache.hadoop.mapred.lib.NLineInputFormat"
COMBINE = "org.apache.hadoop.mapred.lib.CombineTextInputFormat"


def write_env(path, **values):
    """An index_env.sh: strings, and lists as bash arrays."""
    lines = []
    for name, value in values.items():
        if isinstance(value, (list, tuple)):
            lines.append(f"{name}=({' '.join(shlex.quote(str(v)) for v in value)})")
        else:
            lines.append(f"{name}={shlex.quote(str(value))}")
    Path(path).write_text("\n".join(lines) + "\n")
    return path


def script_env(env_file, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HADOOP_") and k not in ("INDEX_ENV", "RUNNER", "PYTHON")}
    env.update(INDEX_ENV=str(env_file), PATH=PYTHON_BIN + os.pathsep + env["PATH"])
    env.update(extra)
    return env


def run(script, env, *args, cwd=None, scripts=SCRIPTS):
    return subprocess.run([str(Path(scripts) / script), *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def files_of(directory):
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(Path(directory).rglob("*")) if p.is_file()}


def cluster_of_build(out):
    """The files of a build's cluster laid out as the cluster job and finalize lay it out:
    the shards of its build-00001/ beside the index, which names them so; the .loc relative;
    without contents.json, what the cluster holds, which only build records (for updates)."""
    published = {}
    for name, data in files_of(Path(out) / "cluster").items():
        if name.endswith("contents.json"):
            continue
        if name in ("cluster.idx", "cluster.loc"):
            data = data.replace(b"build-00001/", b"")
        elif name == "cluster.root":
            data = root_index(files_of(Path(out) / "cluster")["cluster.idx"].replace(b"build-00001/", b""))
        published[name.removeprefix("build-00001/")] = data
    return published


def option_values(argv, option):
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == option]


def jobconf(argv):
    return dict(value.split("=", 1) for value in option_values(argv, "-D"))


# -- shared inputs ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Archives in nested directories (so CDX files are nested too) and their manifest."""
    root = tmp_path_factory.mktemp("launch-corpus")
    archives = make_corpus(root / "warcs" / "seg-a", files=2, captures=60, seed=3)
    archives += make_corpus(root / "warcs" / "seg-b", files=1, captures=60, seed=4, fmt="arc")
    manifest = root / "warcs.txt"
    manifest.write_text("".join(str(a) + "\n" for a in archives))
    return {"root": root / "warcs", "manifest": manifest, "archives": archives}


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory):
    """The reference: `webarchive-index build` of the same archives, same shards."""
    out = tmp_path_factory.mktemp("launch-built") / "out"
    summary = build([str(corpus["root"])], str(out), BuildOptions(shards=SHARDS,
                                                                  lines_per_block=PER_BLOCK,
                                                                  runner="inline"))
    assert summary.published and summary.lines > 100
    return out


def settings(base, corpus, **overrides):
    values = dict(RUNNER="inline", MRJOB_CONF=REPO / "mrjob.conf.sample",
                  WARC_MANIFEST=corpus["manifest"], INPUT_ROOT=corpus["root"],
                  CDX_DIR=base / "cdx", SPLITS_DIR=base / "splits", CLUSTER_DIR=base / "cluster",
                  SHARDS=SHARDS, LINES_PER_BLOCK=PER_BLOCK, PYTHON=sys.executable)
    values.update(overrides)
    return values


# -- settings and usage ---------------------------------------------------------------------

@pytest.mark.parametrize("script", sorted(REQUIRED))
def test_help_explains_the_variables(script, tmp_path):
    for flag in ("--help", "-h"):
        result = run(script, script_env(tmp_path / "absent.sh"), flag)
        assert result.returncode == 0, result.stderr
        for name in REQUIRED[script] + ["INDEX_ENV", "index_env.sample.sh", "Exit status"]:
            assert name in result.stdout, (script, name)
    bad = run(script, script_env(tmp_path / "absent.sh"), "--bogus")
    assert bad.returncode == 2 and "unknown argument '--bogus'" in bad.stderr


@pytest.mark.parametrize("script,missing", [(s, v) for s in sorted(REQUIRED) for v in REQUIRED[s]])
def test_a_missing_variable_stops_with_status_2_naming_it(script, missing, tmp_path, corpus):
    # (the local and inline runners need no MRJOB_CONF: test_build_trust.py)
    values = settings(tmp_path, corpus, **({"RUNNER": "emr"} if missing == "MRJOB_CONF" else {}))
    del values[missing]
    result = run(script, script_env(write_env(tmp_path / "env.sh", **values)))
    assert result.returncode == 2
    assert f"{missing} is not set" in result.stderr and "running:" not in result.stderr
    empty = run(script, script_env(write_env(tmp_path / "env.sh", **values, **{missing: ""})))
    assert empty.returncode == 2 and f"{missing} is not set" in empty.stderr


def test_bad_settings_stop_with_status_2(tmp_path, corpus):
    env_file = tmp_path / "env.sh"
    result = run("runall.sh", script_env(tmp_path / "nowhere.sh"))
    assert result.returncode == 2 and "settings file" in result.stderr and "index_env.sample.sh" in result.stderr
    write_env(env_file, **settings(tmp_path, corpus, RUNNER="spark"))
    result = run("runsample.sh", script_env(env_file))
    assert result.returncode == 2 and "RUNNER is 'spark'" in result.stderr
    # -r overrides RUNNER: past that check, the sampler finds no CDX_DIR to read
    result = run("runsample.sh", script_env(env_file), "-r", "local")
    assert result.returncode == 2 and "is not a local directory" in result.stderr
    for name, value in (("SHARDS", "0"), ("LINES_PER_BLOCK", "many")):
        write_env(env_file, **settings(tmp_path, corpus, **{name: value}))
        result = run("runzipcluster.sh", script_env(env_file))
        assert result.returncode == 2 and f"{name} is '{value}'" in result.stderr


@pytest.mark.parametrize("script", sorted(REQUIRED) + ["runremotecopy.sh"])
def test_a_missing_mrjob_conf_stops_with_status_2_naming_it(script, tmp_path, corpus):
    """Issue 16 item 14: a 30-line traceback and exit status 1."""
    values = settings(tmp_path, corpus, RUNNER="emr", MRJOB_CONF="./mrjob.conf", COPY_CLUSTER=tmp_path,
                      COPY_OUTPUT=tmp_path / "copy", WARC_PREFIX=tmp_path, COPY_DOMAINS="example.com")
    result = run(script, script_env(write_env(tmp_path / "env.sh", **values)), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"{script}: MRJOB_CONF is './mrjob.conf': no such file: copy mrjob.conf.sample there "
        f"and fill it in, or set MRJOB_CONF in {tmp_path / 'env.sh'}"]


def test_runall_with_the_sample_settings_relative_paths_and_all(tmp_path, corpus, built):
    """Issue 16 item 14: with index_env.sample.sh's relative paths, the local runner wrote
    into its temporary directories, deleted as each job ended ("5 CDX files", none there)."""
    shutil.copy(REPO / "index_env.sample.sh", tmp_path / "index_env.sh")
    shutil.copy(REPO / "mrjob.conf.sample", tmp_path / "mrjob.conf")
    (tmp_path / "warc.paths").write_text(corpus["manifest"].read_text())
    env = script_env(tmp_path / "index_env.sh", SHARDS=str(SHARDS), LINES_PER_BLOCK=str(PER_BLOCK),
                     INPUT_ROOT=str(corpus["root"]), RUNNER="local")
    del env["INDEX_ENV"]  # the default, ./index_env.sh
    result = run("runall.sh", env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert files_of(tmp_path / "out" / "cdx") == files_of(built / "cdx")
    assert files_of(tmp_path / "out" / "cluster") == cluster_of_build(built)


def test_index_env_sample_defines_every_variable():
    names = " ".join(REQUIRED["runall.sh"])
    check = f'set -u; source {shlex.quote(str(REPO / "index_env.sample.sh"))}; ' \
            f'for v in {names}; do [ -n "${{!v}}" ] || echo "missing $v"; done'
    result = subprocess.run(["bash", "-c", check], capture_output=True, text=True,
                            env={"PATH": os.environ["PATH"]})
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr


# -- inline: the same cluster as `build` -----------------------------------------------------

def test_runall_inline_builds_what_build_builds(tmp_path, corpus, built):
    env_file = write_env(tmp_path / "env.sh", **settings(tmp_path, corpus))
    result = run("runall.sh", script_env(env_file), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    cluster, reference = files_of(tmp_path / "cluster"), cluster_of_build(built)
    assert cluster == reference
    assert cluster["cluster.loc"].decode().splitlines() == [
        f"cdx-{i:05d}.gz\tcdx-{i:05d}.gz" for i in range(SHARDS)]
    for name in ("splits.txt", "splits.seq", "partitions.seq"):
        assert (tmp_path / "splits" / name).read_bytes() == (built / name).read_bytes()
    assert files_of(tmp_path / "cdx") == files_of(built / "cdx")
    # a published cluster is never overwritten
    again = run("runall.sh", script_env(env_file), cwd=tmp_path)
    assert again.returncode == 2 and "already holds a published cluster" in again.stderr


def test_runall_local_writes_the_shards_that_got_no_lines(tmp_path, corpus):
    # two CDX lines, five shards: shards 2-4 get nothing (mrjob's local runner has no
    # reducer for them), and the launcher writes them empty as `build` does
    archive = str(REPO / "tests" / "data" / "real" / "webrecorder+warcio__example.warc.gz")
    manifest = tmp_path / "one.txt"
    manifest.write_text(archive + "\n")
    out = tmp_path / "built"
    build([archive], str(out), BuildOptions(shards=5, runner="inline"))
    env_file = write_env(tmp_path / "env.sh", **settings(
        tmp_path, corpus, WARC_MANIFEST=manifest, INPUT_ROOT=Path(archive).parent,
        SHARDS=5, LINES_PER_BLOCK=3000, RUNNER="local"))
    result = run("runall.sh", script_env(env_file), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    cluster = files_of(tmp_path / "cluster")
    assert [len(cluster[f"cdx-{i:05d}.gz"]) == 0 for i in range(5)] == [False, False, True, True, True]
    assert cluster == cluster_of_build(out)


# -- emr: mrjob's EMR runner against moto on 127.0.0.1 ---------------------------------------

@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of the checkout, so that the wheel the EMR launch builds stays out of the tree."""
    root = tmp_path_factory.mktemp("checkout") / "webarchive-indexing"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("scripts", "jobs", "webarchive_indexing"):
        shutil.copytree(REPO / name, root / name, ignore=ignore)
    for name in ("setup.py", "README.md", "bootstrap.sh", "mrjob.conf.sample"):
        shutil.copy(REPO / name, root / name)
    return root


@pytest.fixture(scope="module")
def emr_runs(tmp_path_factory, checkout, built):
    """The three launchers with RUNNER=emr and the sample mrjob.conf, one after the other,
    each a cluster lifecycle on moto; the requests each one made."""
    base = tmp_path_factory.mktemp("emr")
    guard_log = base / "network-guard.log"
    runs = {}
    with MotoEMR() as aws:
        s3 = aws.client("s3")
        s3.create_bucket(Bucket="your-bucket")  # the bucket named in mrjob.conf.sample
        for path in sorted((built / "cdx").rglob("*.cdx.gz")):
            s3.upload_file(str(path), "your-bucket", f"idx/cdx/{path.relative_to(built / 'cdx')}")
        manifest = base / "warc.paths"
        manifest.write_text("s3://your-bucket/warcs/seg-a/a.warc.gz\ns3://your-bucket/warcs/seg-a/b.warc.gz\n")
        env = client_env(script_env(base / "env.sh"))
        env.update(network_guard(base / "guard", guard_log))
        env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        # the guard is on: a lookup of a real host fails and is logged
        probe = subprocess.run([sys.executable, "-c", "import socket; socket.getaddrinfo('s3.amazonaws.com', 443)"],
                               env=env, capture_output=True, text=True)
        assert probe.returncode != 0 and "network guard" in probe.stderr
        guard_log.unlink()
        common = dict(RUNNER="emr", MRJOB_CONF=checkout / "mrjob.conf.sample", SHARDS=SHARDS,
                      LINES_PER_BLOCK=PER_BLOCK, PYTHON=sys.executable, WHEEL_DIR=base / "wheels",
                      WARC_MANIFEST=manifest, INPUT_ROOT="s3://your-bucket/warcs/",
                      CDX_DIR="s3://your-bucket/idx/cdx", CLUSTER_DIR="s3://your-bucket/idx/cluster",
                      EXTRA_ARGS=aws.mrjob_args())
        for script, splits_dir in (("runindexwarcs.sh", "s3://your-bucket/idx"),
                                   ("runsample.sh", "s3://your-bucket/idx"),
                                   # splits made elsewhere: local files, uploaded by mrjob
                                   ("runzipcluster.sh", built)):
            write_env(base / "env.sh", **common, SPLITS_DIR=splits_dir)
            first = len(aws.requests)
            result = run(script, env, cwd=base, scripts=checkout / "scripts")
            runs[script] = {"result": result, "requests": aws.requests[first:]}
        runs["aws"] = aws
        runs["clusters"] = {cid: (c.state, [s.state for s in c.steps], c)
                            for cid, c in aws.clusters().items()}
    runs["guard_log"] = guard_log.read_text() if guard_log.exists() else ""
    runs["base"] = base
    return runs


class Sent(Requests):
    """What one launcher run sent to moto."""

    def step_args(self):
        (call,) = self.emr_calls("AddJobFlowSteps")
        (step,) = call["Steps"]
        assert step["HadoopJarStep"]["Jar"] == "command-runner.jar"
        args = step["HadoopJarStep"]["Args"]
        assert args[0] == "hadoop-streaming"
        return args[1:]

    def upload(self, suffix):
        (body,) = [v for k, v in self.s3_puts().items() if k.endswith(suffix)]
        return body


@pytest.mark.parametrize("script", ["runindexwarcs.sh", "runsample.sh", "runzipcluster.sh"])
def test_emr_launch_completes_a_cluster_lifecycle(emr_runs, script):
    result = emr_runs[script]["result"]
    assert result.returncode == 0, result.stderr[-5000:]
    assert "COMPLETED" in result.stderr and "Terminating cluster" in result.stderr
    sent = Sent(emr_runs[script]["requests"])
    actions = [name for name, _ in sent.emr_calls()]
    assert actions[0] == "RunJobFlow" and "AddJobFlowSteps" in actions and actions[-1] == "TerminateJobFlows"
    (cluster_id,) = {b["JobFlowId"] for b in sent.emr_calls("AddJobFlowSteps")}
    state, steps, _ = emr_runs["clusters"][cluster_id]
    assert state == "TERMINATED" and steps == ["COMPLETED"]
    # mrjob cleaned up its S3 temp files after the job
    tmp_uploads = [k for k in sent.s3_puts() if "/mrjob/tmp/" in k]
    assert tmp_uploads and set(tmp_uploads) <= set(sent.s3_deletes())
    # the roles are named, not created; no IAM (or any other) service was needed
    assert {r["service"] for r in emr_runs[script]["requests"]} == {"s3", "elasticmapreduce"}


def test_emr_nothing_left_this_machine(emr_runs):
    assert emr_runs["guard_log"] == ""
    assert all(r["host"].startswith("127.0.0.1:") for r in emr_runs["aws"].requests)


def test_emr_cluster_is_launched_as_the_sample_conf_says(emr_runs, checkout):
    sent = Sent(emr_runs["runzipcluster.sh"]["requests"])
    (flow,) = sent.emr_calls("RunJobFlow")
    assert flow["ReleaseLabel"].startswith("emr-7.")
    assert flow["JobFlowRole"] == "EMR_EC2_DefaultRole" and flow["ServiceRole"] == "EMR_DefaultRole"
    assert flow["LogUri"] == "s3://your-bucket/mrjob/logs/"
    assert flow["Applications"] == [{"Name": "Hadoop"}]
    groups = {g["InstanceRole"]: g for g in flow["Instances"]["InstanceGroups"]}
    assert groups["CORE"]["InstanceCount"] == 8 and groups["CORE"]["Market"] == "ON_DEMAND"
    (tags,) = sent.emr_calls("AddTags")
    assert {"Key": "project", "Value": "webarchive-indexing"} in tags["Tags"]
    # one bootstrap action: mrjob's master script, which fetches bootstrap.sh and the wheel
    (action,) = flow["BootstrapActions"]
    master_uri = action["ScriptBootstrapAction"]["Path"]
    assert master_uri.startswith("s3://your-bucket/mrjob/tmp/zip_cluster.") and master_uri.endswith("/b.sh")
    master = sent.s3_puts()[master_uri].decode()
    assert "sudo bash $__mrjob_PWD/bootstrap.sh $__mrjob_PWD/wheels/" in master
    assert "aws s3 cp s3://your-bucket/mrjob/tmp/" in master
    assert sent.upload("/files/bootstrap.sh") == (checkout / "bootstrap.sh").read_bytes()
    # the wheel built from the checkout, with the jobs inside
    with tarfile.open(fileobj=io.BytesIO(sent.upload("/files/wheels.tar.gz"))) as tar:
        (wheel_name,) = [n for n in tar.getnames() if n.endswith(".whl")]
        wheel = tar.extractfile(wheel_name).read()
    assert wheel_name.startswith("webarchive_indexing-0.1.0-py3-none-any")
    with zipfile.ZipFile(io.BytesIO(wheel)) as whl:
        assert whl.read("webarchive_indexing/jobs/zip_cluster.py") == (checkout / "jobs" / "zip_cluster.py").read_bytes()
        metadata = next(n for n in whl.namelist() if n.endswith("/METADATA"))
        assert "Requires-Dist: mrjob" in whl.read(metadata).decode()


def test_emr_cluster_job_uploads_and_step(emr_runs, checkout, built):
    sent = Sent(emr_runs["runzipcluster.sh"]["requests"])
    assert sent.upload("/files/wd/zip_cluster.py") == (checkout / "jobs" / "zip_cluster.py").read_bytes()
    assert sent.upload("/files/wd/_partition.lst") == (built / "partitions.seq").read_bytes()
    assert sent.upload("/files/wd/splits.txt") == (built / "splits.txt").read_bytes()
    with zipfile.ZipFile(io.BytesIO(sent.upload("/files/wd/mrjob.zip"))) as zf:
        assert "mrjob/emr.py" in zf.namelist()
    args = sent.step_args()
    conf = jobconf(args)
    assert option_values(args, "-partitioner") == [TOTAL_ORDER]
    assert conf["mapreduce.job.reduces"] == str(SHARDS)
    assert option_values(args, "-inputformat") == [COMBINE]
    (files,) = option_values(args, "-files")
    names = dict(reversed(f.split("#", 1)) for f in files.split(","))
    assert names["_partition.lst"].startswith("s3://your-bucket/mrjob/tmp/")
    assert names["_partition.lst"] in sent.s3_puts() and names["splits.txt"] in sent.s3_puts()
    assert conf["mapreduce.reduce.speculative"] == "false"
    assert conf["mapreduce.task.timeout"] == "9600000"
    assert conf["mapreduce.input.fileinputformat.split.maxsize"] == "50000000"
    assert conf["mapreduce.job.reduce.slowstart.completedmaps"] == "1.0"
    assert conf["mapreduce.output.fileoutputformat.compress"] == "false"
    assert conf["stream.num.map.output.key.fields"] == "2"
    assert conf["stream.map.input.ignoreKey"] == "true"
    assert conf["mapreduce.input.fileinputformat.input.dir.recursive"] == "true"
    assert option_values(args, "-input") == ["s3://your-bucket/idx/cdx"]
    reducer = args[args.index("-reducer") + 1]
    assert reducer.startswith("/bin/sh -x setup-wrapper.sh python3.11 zip_cluster.py")
    assert "--cluster-dir 's3://your-bucket/idx/cluster'" in reducer
    assert "--partitions _partition.lst" in reducer
    assert conf["mapreduce.totalorderpartitioner.path"] == "file://${user.dir}/_partition.lst"


def test_emr_index_and_sample_steps(emr_runs):
    index = Sent(emr_runs["runindexwarcs.sh"]["requests"])
    args = index.step_args()
    assert option_values(args, "-inputformat") == [NLINE]
    assert jobconf(args)["mapreduce.input.lineinputformat.linespermap"] == "2"
    assert jobconf(args)["mapreduce.map.speculative"] == "false"
    (manifest_uri,) = option_values(args, "-input")
    assert index.s3_puts()[manifest_uri].decode().startswith("s3://your-bucket/warcs/")
    assert "--input-root 's3://your-bucket/warcs/'" in args[args.index("-mapper") + 1]
    sample = Sent(emr_runs["runsample.sh"]["requests"])
    args = sample.step_args()
    conf = jobconf(args)
    assert conf["mapreduce.job.reduces"] == "1" and conf["mapreduce.map.output.compress"] == "true"
    assert option_values(args, "-inputformat") == [COMBINE]
    assert "--splits-dir 's3://your-bucket/idx'" in args[args.index("-reducer") + 1]


# -- mrjob.conf.sample and bootstrap.sh ------------------------------------------------------

def test_mrjob_conf_sample_holds_no_secrets_and_is_complete():
    text = (REPO / "mrjob.conf.sample").read_text()
    conf = yaml.safe_load(text)["runners"]
    for secret in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
        assert secret not in text
    emr = conf["emr"]
    assert emr["release_label"].startswith("emr-7.") and emr["python_bin"] == "python3.11"
    assert emr["iam_instance_profile"] and emr["iam_service_role"] and emr["region"]
    assert emr["cloud_tmp_dir"].startswith("s3://") and emr["cloud_log_dir"].startswith("s3://")
    assert any("bootstrap.sh#" in cmd for cmd in emr["bootstrap"])
    assert "spot" in text.lower()
    assert conf["hadoop"]["python_bin"] == "python3.11" and "s3a://" in text


def test_bootstrap_installs_the_wheel_with_the_chosen_python(tmp_path):
    log = tmp_path / "python.log"
    fake_python = tmp_path / "python3.11"
    fake_python.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n")
    fake_python.chmod(0o755)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    bootstrap = ["bash", str(REPO / "bootstrap.sh")]
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    assert subprocess.run(bootstrap, env=env, capture_output=True).returncode == 2
    empty = subprocess.run(bootstrap + [str(wheels)], env=env, capture_output=True, text=True)
    assert empty.returncode == 1 and "expected one webarchive_indexing-*.whl" in empty.stderr
    wheel = wheels / "webarchive_indexing-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    done = subprocess.run(bootstrap + [str(wheels)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert f"-m pip install --quiet --no-cache-dir --find-links {wheels} {wheel}" in calls
    assert any("import mrjob, warcio, surt, isal, zstandard, webarchive_indexing.jobs.zip_cluster" in c
               for c in calls)
