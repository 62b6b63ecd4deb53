"""Every command line of the README, of docs/*.md and of the jobs' docstrings runs in a
test as it is written (paths adapted), so that a documented command never breaks
unnoticed (issue 16: `corpus --out`, as the README showed it, failed and no test ran it).

Each command found is one of:

* a **synopsis** (``[--shards N]``, ``INPUT...``, ``CLUSTER``: placeholders): every option
  it names of a program of ours (``webarchive-index``, a launcher, a job), and every
  choice it lists (``cdxj|cdx11``), is the program's own (``--help``);
* **run here**, as written, in a directory laid out like the one the docs assume: the
  samples, a crawl in buckets named as in the docs (``s3://commoncrawl/``,
  ``s3://bucket/``...) on moto's S3 server, ``https://data.commoncrawl.org/`` served by
  a local HTTP server with the same files; it must exit 0;
* **run by another test** (``COVERED``): with the test that runs it, or its equivalent,
  and why not here (a real EMR or YARN cluster, the network, the suite itself).

A command in none of them fails ``test_every_documented_command_is_run_somewhere``: a new
command in the docs needs a line here.
"""
import ast
import gzip
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rangeserver
import s3server
from webarchive_indexing import cli, storage
from webarchive_indexing.commands.build import build
from webarchive_indexing.options import BuildOptions

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
JOBS = sorted((REPO / "jobs").glob("*.py"))
# What a command line starts with (after a "$ " prompt and VAR=value assignments)
PROGRAMS = ("webarchive-index", "make", "python", "python3", ".venv/bin/python", "spark-submit",
            ".venv/bin/spark-submit", "aws", "awk", "zcat", "hadoop", "sudo", "sort", "pip",
            "bash", "zstd")
PATHS = ("scripts/", "./scripts/", "jobs/")
# Words that stand for what a user fills in
PLACEHOLDER = re.compile(r"\[(?=[-A-Z!])|\.\.\.|<\w+>|\b(INPUT|OUTDIR|OUT|CLUSTER|CLUSTER_DIR|URL|LIST|PREFIX|"
                         r"FILE|DIR|COPY_OUTPUT|N|TS|BLOCKS)\b")
CC = "s3://commoncrawl/"
CC_INDEX = CC + "cc-index/collections/CC-MAIN-2024-22/indexes/"

# Commands that another test runs (a regular expression matching the command -> the test,
# and why it does not run here)
COVERED = {
    r"^make test$": ("the suite itself", ".ci/run"),
    r"^make PYTHON=python3\.13 test$": ("the suite itself, on another Python", ".ci/run"),
    r"^make clean-venv demo$": ("makes the environment the suite runs in again", ".ci/run"),
    r"^make bench$": ("minutes of benchmarks, not a check", "bench/run.py"),
    r"^python bench/\w+\.py( --[-\w]+( [\w,.-]+)?)*$": ("a benchmark: minutes, not a check", "bench/"),
    r"^pip wheel --no-deps$": ("how the EMR launchers make the wheel they ship",
                               "test_launchers.py::test_emr_cluster_is_launched_as_the_sample_conf_says"),
    r"^aws ": ("AWS itself (no network here): the listing it makes is made by the fixtures",
               "test_docs.py::world"),
    r"^hadoop jar \.\.\./hadoop-streaming\.jar": (
        "what mrjob runs on Hadoop, recorded from a run on real Hadoop's local job runner",
        "test_real_hadoop.py::test_cluster_job_command_line"),
    r"^WEBARCHIVE_INDEXING_PURE=1 \.venv/bin/python -m pip wheel ": (
        "the wheel the EMR launchers build the same way",
        "test_launchers.py::test_emr_cluster_is_launched_as_the_sample_conf_says"),
    r"^sudo bash bootstrap\.sh ": ("installs into the system Python of a node",
                                    "test_launchers.py::test_bootstrap_installs_the_wheel_with_the_chosen_python"),
    r"^PYSPARK_PYTHON=\$PWD/\.venv/bin/python \.venv/bin/spark-submit --master 'local\[2\]' ": (
        "spark-submit on local[2], the same script and options (a JVM of its own: slow)",
        "test_spark.py::test_spark_submit_entry_script"),
    r"^PYSPARK_PYTHON=/usr/bin/python3\.11 spark-submit --master yarn": (
        "YARN: not here", "test_spark.py::test_spark_submit_entry_script"),
    r"^python jobs/zip_cluster\.py -r hadoop ": ("Hadoop: runall.sh runs it on real Hadoop",
                                                 "test_real_hadoop.py::test_cluster_job_command_line"),
    r"^python jobs/remote_copy\.py -r emr ": ("EMR: not here; the job runs on real Hadoop's "
                                              "local job runner",
                                              "test_copy.py::test_launcher_on_hadoop"),
    r"^scripts/hadoop-local/fetch\.sh$": (
        "fetches real Hadoop once, then its hadoop command runs",
        "test_real_hadoop.py::test_hadoop_command_runs_hadoops_main_classes"),
    r"^(scripts/hadoop-local/pseudo-cluster\.sh /tmp/rehearsal |hadoop fs -put warcs /warcs$|"
    r"scripts/runall\.sh -r hadoop$)": (
        "a pseudo-distributed Hadoop started by the same script, the same launcher on it "
        "(minutes: marked `cluster`)",
        "test_real_hadoop.py::test_pseudo_cluster_builds_what_build_builds"),
    r"^webarchive-index query \"\$FS/idx/cluster\" ": (
        "query on that cluster's hdfs://", "test_real_hadoop.py::test_query_answers_from_the_hdfs_cluster"),
    r"^webarchive-index (zstd-dict crawl/ |recompress |cdx a\.warc\.zst$)|^zstd -d -D ": (
        "in a directory with the crawl/ they name, the zstd tool decoding what recompress wrote",
        "test_recompress.py::test_readme_zstd_commands_as_written"),
    r"^webarchive-index (build crawl(-zst)?/ |copy copy out(-zst)?/ .*--warc-prefix crawl)": (
        "on a crawl/ and its recompressed twin crawl-zst/, the two copies compared",
        "test_copy_zstd.py::test_readme_copy_commands_as_written"),
    r"^webarchive-index export out --format parquet -o table$": (
        "after the build --parquet above it, and compared with its table",
        "test_columnar.py::test_doc_command_lines"),
    r"^webarchive-index copy (check|copy) --records-csv records\.csv": (
        "the records.csv that the DuckDB query above it writes from a table of Common Crawl "
        "excerpts", "test_columnar.py::test_doc_copy_from_a_query"),
    r"^webarchive-index (build (warcs/ old-cdx/|out/ more\.cdxj\.gz|url-index\.|old-cdx/ -o as-cdx11 |"
    r"teste\.cdx )|export (out|as-cdx11) -o all)": (
        "in a directory with the indexes of every kind they name",
        "test_index_build.py::test_the_commands_of_docs_indexes_md_run_as_written"),
    r"^webarchive-index build (warcs/ (new-warcs/ )?-o (out|other|with-mrjob|again) |"
    r"out/cdx/ -o from-cdx |new-warcs/ -o out --update$|-o out --update --remove )": (
        "in order, in a directory holding two generated crawls (warcs/, new-warcs/), each "
        "cluster then compared with the others (docs/local-engine.md)",
        "test_local_engine.py::test_the_commands_of_docs_local_engine_run_as_written"),
    r"^webarchive-index (acl |(query|export|copy check) out .*--acl rules/|serve cc=out --acl )|"
    r"^curl .*127\.0\.0\.1:8080/cc/(ap/|cdx\?url=archive)": (
        "in order, in a directory with the samples' cluster, an exclusions.txt and urls.txt, "
        "the server on a free port", "test_access.py::test_the_commands_of_docs_access_control_md_run_as_written"),
    r"^webarchive-index (\S+ waczs/|query out .*,entry$|copy copy out .*--warc-prefix waczs$)": (
        "in order, in a directory of the samples as warcs/, after py-wacz's `wacz create` lines",
        "test_wacz.py::test_the_commands_of_docs_wacz_md_run_as_written"),
    r"^(webarchive-index serve cc=out/cluster |curl 'http://127\.0\.0\.1:8080/cc/cdx\?)": (
        "a server that runs until stopped: started on a free port, asked with curl",
        "test_serve.py::test_readme_serve_commands"),
}


# Commands run here: a regular expression -> where, below the world's home directory; the
# words that stand for a path of it; what the command makes there (a glob, or None)
RUN_HERE = {
    r"^make demo$": (".", {}, "demo-out/cluster/build-00001/cdx-00003.gz"),
    r"^webarchive-index --version$": (".", {}, None),
    r"^webarchive-index copy copy \S+ --domains-file my-domains.txt ": (".", {}, "extract/*.cdxj"),
    r"^webarchive-index (build|cdx|query|copy|finalize|corpus) ": (".", {}, None),
    r"^webarchive-index wacz samples/": (".", {}, "samples.wacz"),
    r"^awk .* cluster\.loc > cluster-absolute\.loc$": ("out/cluster", {}, "cluster-absolute.loc"),
    r"^zcat warc\.paths\.gz \| sed ": (".", {}, "warcs.txt"),
    r"^LC_ALL=C sort -m OUT/\*\.cdxj$": (".", {"OUT/": "copied/"}, None),
    # relative paths on the local runner, whose tasks run in directories of their own
    r"^python jobs/index_warcs\.py -r local ": (".", {}, "out/cdx/*.cdx.gz"),
    r"^python jobs/sample_splits\.py -r local ": (".", {}, "job-out/splits.txt"),
    r"^python jobs/zip_cluster\.py -r local ": (".", {}, "job-out/cluster/part-00003"),
}


def _run_here(command):
    """(directory, the command with its placeholders filled in, what it makes) if it is run
    here."""
    for pattern, (where, words, made) in RUN_HERE.items():
        if re.search(pattern, command):
            for word, path in words.items():
                command = command.replace(word, path)
            return None if is_synopsis(command) else (where, command, made)
    return None


def runs_here(command):
    return _run_here(command) is not None


# -- finding the commands ----------------------------------------------------------------------

def _joined(lines):
    """Lines with their continuations (a backslash, or a pipe at the end) joined."""
    out, current = [], ""
    for line in lines:
        current = current + " " + line.strip() if current else line
        if current.endswith("\\"):
            current = current[:-1].rstrip()
            continue
        if current.endswith("|"):
            continue
        out.append(current)
        current = ""
    return out + ([current] if current else [])


def _command(text):
    """``text`` without its prompt, if it is a command line (else None)."""
    text = text.strip().removeprefix("$ ")
    text = text.split("  #", 1)[0].rstrip()
    words = text.split()
    rest = [w for w in words if not re.fullmatch(r"[A-Z_]+=\S*", w)]
    if rest and (rest[0] in PROGRAMS or rest[0].startswith(PATHS)) and len(words) > 1:
        return text
    return None


def documented_commands():
    """(where, command) of every command line of the docs and the jobs' docstrings."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for match in re.finditer(r"```[^\n]*\n(.*?)```", text, re.S):
            first = text[:match.start()].count("\n") + 2
            for line in _joined(match.group(1).splitlines()):
                command = _command(line)
                if command:
                    found.append((f"{doc.relative_to(REPO)}:{first}", command))
        prose = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        for match in re.finditer(r"`([^`\n]+)`", prose):
            command = _command(match.group(1))
            # a command line, not the name of one (`webarchive-index copy check`)
            if command and re.search(r"\s-|/|=|\.", command.split(None, 1)[1]):
                line = prose[:match.start()].count("\n") + 1
                found.append((f"{doc.relative_to(REPO)}:{line}", command))
    for job in JOBS:
        doc = ast.get_docstring(ast.parse(job.read_text()))
        for line in _joined(doc.splitlines()):
            command = _command(line)
            if command and command.startswith("python jobs/"):
                found.append((str(job.relative_to(REPO)), command))
    return found


def is_synopsis(command):
    return bool(PLACEHOLDER.search(command))


def covered_by(command):
    return next((test for pattern, test in COVERED.items() if re.search(pattern, command)), None)


def test_every_documented_command_is_run_somewhere():
    commands = documented_commands()
    assert len(commands) > 30
    for where, command in commands:
        assert (covered_by(command) or runs_here(command) or is_synopsis(command)), \
            f"{where}: `{command}` is run by no test: run it in test_docs.py, or say which test does"
    # every test named as running a command is there
    for _, test in COVERED.values():
        path, _, name = test.partition("::")
        if name and path.endswith(".py"):
            assert f"def {name}(" in (REPO / "tests" / path).read_text(), test


# -- synopses: options and choices of the command's own ------------------------------------------

def _program(command):
    """(the words of the program that ``command`` runs, with its subcommands; the words
    after them), where it is ours: webarchive-index, a launcher or a job; else None."""
    words = command.split()
    for i, word in enumerate(words):
        if word == "webarchive-index":
            end = i + (3 if words[i + 1:i + 2] == ["copy"] else 2)
            return words[i:end], words[end:]
        if re.fullmatch(r"(\./)?(scripts/\w+\.sh|jobs/\w+\.py)", word):
            return [word], words[i + 1:]
    return None


def _help(program):
    """``--help`` of ``program``: webarchive-index and its subcommands, a launcher, a job."""
    if program[0] == "webarchive-index":
        argv = [sys.executable, "-m", "webarchive_indexing.cli", *program[1:], "--help"]
    elif program[0].endswith(".sh"):
        argv = [str(REPO / program[0].removeprefix("./")), "--help"]
    else:
        argv = [sys.executable, str(REPO / program[0]), "--help"]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


SYNOPSES = [(where, command) for where, command in documented_commands()
            if is_synopsis(command) and _program(command) and not runs_here(command)]


@pytest.mark.parametrize("where,command", SYNOPSES, ids=[f"{w}-{c[:40]}" for w, c in SYNOPSES])
def test_a_synopsis_names_only_the_commands_options(where, command):
    program, rest = _program(command)
    said = _help(program)
    text = " ".join(rest)
    for flag in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", text):
        assert re.search(rf"(?<![\w-]){re.escape(flag)}\b", said), (where, flag)
    for flag, choices in re.findall(r"(-r|--[\w-]+) \[?([\w*]+(?:\|[\w*]+)+)", text):
        listed = re.search(rf"{re.escape(flag)} \{{([^}}]+)\}}", said)
        if listed:
            assert sorted(choices.split("|")) == sorted(listed[1].split(",")), (where, flag)
        else:  # a launcher's help lists them in words
            assert all(choice in said for choice in choices.split("|")), (where, flag)


# -- running them ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A directory as the docs assume one (the samples, a built cluster, manifests), and
    the buckets and web server they name, with the same archives."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    root = tmp_path_factory.mktemp("docs")
    home = root / "home"
    home.mkdir()
    shutil.copytree(REPO / "samples", home / "samples")
    shutil.copytree(REPO / "samples", home / "warcs")
    (home / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (home / "jobs").symlink_to(REPO / "jobs")
    for name in ("my-domains.txt", "d.txt", "domains.txt"):
        (home / name).write_text("example.com\narchive.org/images/*\n")
    # a crawl as Common Crawl publishes one: archives under crawl-data/, their list, an index
    mirror = root / "commoncrawl"
    segment = "crawl-data/CC-MAIN-2024-22/segments/1715971057216.39/warc"
    names = sorted(p.name for p in (REPO / "samples").glob("*.warc.gz"))
    for name in names:
        (mirror / segment).mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "samples" / name, mirror / segment / name)
    listing = "".join(f"{segment}/{name}\n" for name in names).encode()
    (mirror / "crawl-data" / "CC-MAIN-2024-22" / "warc.paths.gz").write_bytes(gzip.compress(listing))
    (home / "warc.paths.gz").write_bytes(gzip.compress(listing))
    build([str(mirror)], str(root / "cc-index"),  # names crawl-data/..., as Common Crawl's
          BuildOptions(shards=2, lines_per_block=20, runner="inline", progress=False))
    shutil.copytree(root / "cc-index" / "cluster",
                    mirror / "cc-index" / "collections" / "CC-MAIN-2024-22" / "indexes")
    with s3server.running(), rangeserver.serving(mirror) as web:
        for bucket in ("commoncrawl", "bucket", "my-bucket", "your-bucket"):
            storage.s3._client().create_bucket(Bucket=bucket)
        s3server.upload_tree(mirror, CC)
        s3server.upload_tree(root / "cc-index", "s3://bucket/index")
        # what the docs' commands read, where they read it
        build([str(home / "samples")], str(home / "out"), BuildOptions(shards=2, runner="inline",
                                                                      progress=False))
        assert cli.main(["copy", "copy", str(home / "out"), "--domains", "archive.org", "-o",
                         str(home / "copied"), "--warc-prefix", str(home / "samples"), "--runner",
                         "inline", "--no-progress"]) == 0
        yield {"home": home, "web": web.url + "/"}


def adapted(command, world):
    """The command as run here: the web server for https://data.commoncrawl.org/, the
    checkout's scripts."""
    return command.replace("https://data.commoncrawl.org/", world["web"])


def run(command, cwd):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["bash", "-c", "set -eo pipefail; " + command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


RUNNABLE = [c for c in documented_commands() if runs_here(c[1]) and not covered_by(c[1])]


@pytest.mark.parametrize("where,command", RUNNABLE, ids=[f"{w}-{c[:40]}" for w, c in RUNNABLE])
def test_a_documented_command_runs_as_written(world, where, command):
    where_run, command, made = _run_here(command)
    cwd = world["home"] / where_run
    if command == "make demo":
        # the checkout's Makefile on the samples; its .venv, made already, left as it is
        venv = Path(sys.executable).parent.parent
        command = (f"make -f {shlex.quote(str(REPO / 'Makefile'))} VENV={shlex.quote(str(venv))} "
                   f"-o {shlex.quote(str(venv / 'bin' / 'webarchive-index'))} demo")
    done = run(adapted(command, world), cwd)
    assert done.returncode == 0, f"{where}: {command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert made is None or list(cwd.glob(made)), f"{where}: {command} made no {made}"
