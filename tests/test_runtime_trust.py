"""The machine a command runs on (issue 21, items 6, 7, 9 and 10): readers of its output
that go away, workers that are killed or outlive a killed command, the limit of open files,
a table replaced while it is read."""
import errno
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.zipnum.reader import open_cluster

HERE = Path(__file__).parent
CLI = [sys.executable, "-m", "webarchive_indexing.cli"]


@pytest.fixture(scope="module")
def warcs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runtime") / "warcs"
    make_corpus(root, files=4, captures=80, seed=81)
    for path in root.glob("*.jsonl"):
        path.unlink()
    return root


def lines_of(out):
    return list(open_cluster(str(out)).lookup_range(b"", b"\xff"))


def marked(mark):
    """The processes whose environment holds ``RUNTIME_TEST_MARK=mark``."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if f"RUNTIME_TEST_MARK={mark}".encode() in fh.read().split(b"\0"):
                    found.append(int(entry))
        except (OSError, ValueError):
            pass
    return found


def children(pid):
    """The processes whose parent is ``pid``, with their command lines."""
    found = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
            if parent == pid:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    found[int(entry)] = fh.read().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            pass
    return found


def gone_within(mark, seconds):
    """Whether every process marked ``mark`` is gone within ``seconds`` (those still
    there after it are killed)."""
    deadline = time.monotonic() + seconds
    while (left := marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return not left


def marked_env(mark):
    return dict(os.environ, RUNTIME_TEST_MARK=mark)


# -- 21.7: a reader that goes away -------------------------------------------------------

def test_a_build_whose_reader_goes_away_publishes_all_the_same(warcs, tmp_path):
    """``build ... 2>&1 | head -1``: progress and the summary go nowhere once the pipe is
    closed, and the build goes on to publish its cluster (exit status 0)."""
    out = tmp_path / "out"
    build = subprocess.Popen([*CLI, "build", str(warcs), "-o", str(out), "--shards", "2",
                              "--no-progress"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    first = build.stdout.readline()
    build.stdout.close()  # as head does after its line
    assert build.wait(timeout=300) == 0
    assert first.startswith(b"[1/3] indexing 4 archives")
    reference = tmp_path / "reference"
    done = subprocess.run([*CLI, "build", str(warcs), "-o", str(reference), "--shards", "2",
                           "--no-progress"], capture_output=True)
    assert done.returncode == 0, done.stderr
    assert lines_of(out) == lines_of(reference) and len(lines_of(out)) > 300


def test_a_query_whose_reader_goes_away_ends_quietly(warcs, tmp_path):
    out = tmp_path / "out"
    assert subprocess.run([*CLI, "build", str(warcs), "-o", str(out), "--no-progress"],
                          capture_output=True).returncode == 0
    for argv in (["query", str(out), "*.com"], ["export", str(out)]):
        reader = subprocess.Popen([*CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  bufsize=0)
        assert reader.stdout.read(10)
        reader.stdout.close()
        assert reader.wait(timeout=120) == 0, argv
        assert reader.stderr.read() == b"" or argv[0] == "export"


def test_a_build_whose_worker_cannot_start_fails(warcs, tmp_path):
    """A broken pipe to a helper process of the pool (its interpreter could not start) is
    a failure, in one line; it was a quiet exit status 0, as if a reader had gone."""
    out = tmp_path / "out"
    script = textwrap.dedent(f"""
        import multiprocessing, sys
        multiprocessing.set_executable("/bin/false")
        from webarchive_indexing.cli import main
        sys.exit(main(["build", {str(warcs)!r}, "-o", {str(out)!r}, "--workers", "2",
                       "--no-progress"]))
    """)
    for _ in range(3):  # it fails at one of several places: wherever, not as success
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 1, done.stderr
        # (after it, what the standard library's finalizers meet may follow)
        (said,) = [line for line in done.stderr.splitlines() if line.startswith("webarchive")]
        assert re.match(r"webarchive-index build: a worker process (\(pid \d+\) exited with "
                        r"status 1|could not start: .+)$", said)
        assert not (out / "cluster" / "cluster.idx").exists()


# -- 21.9: workers killed, and workers of a command killed --------------------------------

def test_a_worker_killed_mid_build_is_one_line(warcs, tmp_path):
    """A worker killed as the out-of-memory killer kills (SIGKILL) while the build has work
    for it: one line naming it and the signal, exit status 1, nothing published."""
    out = tmp_path / "out"
    # stopped as it publishes the split points: the pool has written the sorted runs and
    # is to write the shards
    build = subprocess.Popen([sys.executable, str(HERE / "killpoint.py"), "stop", r"splits\.txt$",
                              "build", str(warcs), "-o", str(out), "--shards", "2",
                              "--workers", "2", "--no-progress"],
                             stderr=subprocess.PIPE, text=True)
    try:
        _, status = os.waitpid(build.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)
        workers = [pid for pid, line in children(build.pid).items() if "spawn_main" in line]
        assert len(workers) == 2
        os.kill(workers[0], signal.SIGKILL)
    finally:
        build.send_signal(signal.SIGCONT)
    _, err = build.communicate(timeout=120)
    assert build.returncode == 1
    assert "Traceback" not in err
    assert err.splitlines()[-1] == (
        f"webarchive-index build: a worker process (pid {workers[0]}) was killed by SIGKILL (as "
        "the out-of-memory killer does: see `dmesg`; run fewer workers (--workers) or give it "
        "more memory)")
    assert not (out / "cluster" / "cluster.idx").exists()


def test_the_workers_of_a_killed_build_die_with_it(warcs, tmp_path):
    """A build killed with SIGKILL (as it publishes, its pool idle but there) takes its
    workers with it: none holds its pipes open, none is left."""
    mark = uuid.uuid4().hex
    build = subprocess.Popen([sys.executable, str(HERE / "killpoint.py"), "before",
                              r"cluster/cluster\.loc$", "build", str(warcs), "-o",
                              str(tmp_path / "out"), "--workers", "2", "--no-progress"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=marked_env(mark))
    try:
        build.communicate(timeout=60)  # the pipes' other ends are closed: all holders gone
    finally:
        left = gone_within(mark, 5)
    assert build.returncode == -signal.SIGKILL
    assert left


def test_every_pool_of_the_package_dies_with_its_process(tmp_path):
    """``workers.process_pool`` (the local engine's pool, so copy's, ``run_each``'s,
    ``write_tables``'): its workers, busy or idle, die with the process that made it."""
    mark = uuid.uuid4().hex
    script = textwrap.dedent("""
        import os, signal, time
        from webarchive_indexing.util.workers import process_pool
        with process_pool(2) as pool:
            busy, idle = pool.submit(time.sleep, 600), pool.submit(time.sleep, 0)
            time.sleep(3)  # both started (one sleeping, one waiting for work)
            print(len(pool._processes), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    killed = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=marked_env(mark))
    try:
        out, _ = killed.communicate(timeout=60)
    finally:
        left = gone_within(mark, 5)
    assert killed.returncode == -signal.SIGKILL and out == "2\n"
    assert left


# -- 21.6: the limit of open files --------------------------------------------------------

@pytest.fixture(scope="module")
def many_indexes(tmp_path_factory):
    """500 small CDXJ files of 10 lines each: two groups of 250 (under the fan-in of 256)
    are more than a limit of 256 open files lets a worker merge at once."""
    root = tmp_path_factory.mktemp("many") / "indexes"
    root.mkdir()
    for number in range(500):
        (root / f"part-{number:04d}.cdxj").write_text("".join(
            f'com,example{number:04d})/p{line} 20200101000000 {{"url": '
            f'"http://example{number:04d}.com/p{line}", "mime": "text/html", "status": "200", '
            f'"digest": "AAAA", "length": "100", "offset": "{line * 100}", '
            f'"filename": "x{number}.warc.gz"}}\n' for line in range(10)))
    return root


def limited(open_files):
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
    return limit


def test_many_index_inputs_under_macos_limit_of_open_files(many_indexes, tmp_path):
    """At ``ulimit -n 256`` (macOS's default) every line of 500 index inputs is in the
    cluster: a task opens no more files than the limit allows (they were problems in the
    input, which --on-error skip left out)."""
    out = tmp_path / "out"
    done = subprocess.run([*CLI, "build", str(many_indexes), "-o", str(out), "--workers", "2",
                           "--on-error", "skip", "--no-progress"], capture_output=True,
                          text=True, preexec_fn=limited(256), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(lines_of(out)) == 5000


def test_too_low_a_limit_of_open_files_stops_the_build(many_indexes, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([*CLI, "build", str(many_indexes), "-o", str(out), "--on-error", "skip",
                           "--no-progress"], capture_output=True, text=True,
                          preexec_fn=limited(24), timeout=300)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "webarchive-index build: only 24 files may be open at once: too few to merge sorted "
        "files (at least 34) (raise the limit of open files of a process, e.g. `ulimit -n 4096`)")
    assert not (out / "cluster" / "cluster.idx").exists()


def test_too_many_open_files_is_no_problem_of_an_input(many_indexes, tmp_path):
    """Files that cannot be opened for the limit (here: merges told to leave no room for
    what a worker holds anyway) stop the build, said in one line, even with --on-error
    skip: they are not problems of the inputs, to leave out of a cluster."""
    out = tmp_path / "out"
    script = textwrap.dedent(f"""
        import sys
        from webarchive_indexing import cli
        from webarchive_indexing.build import merge
        merge.FD_MARGIN = 0
        sys.exit(cli.main(["build", {str(many_indexes)!r}, "-o", {str(out)!r}, "--workers", "2",
                           "--on-error", "skip", "--no-progress"]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          preexec_fn=limited(64), timeout=300)
    assert done.returncode == 1
    assert re.fullmatch(r"webarchive-index build: \S+/part-\d{4}\.cdxj: Too many open files \(raise "
                        r"the limit of open files of a process, e\.g\. `ulimit -n 4096`\)",
                        done.stderr.splitlines()[-1])
    assert "error:" not in done.stderr
    assert not (out / "cluster" / "cluster.idx").exists()


@pytest.mark.parametrize("kind", ["cdx", "cluster"])
def test_too_many_open_files_is_no_problem_of_an_input_for_the_jobs_either(tmp_path, monkeypatch,
                                                                          kind):
    """The mrjob and Spark engines' index inputs are read (and rewritten) by
    ``indexprep.prepare``: there too a failure of the machine ends the build, never counted
    as the input's problem to skip."""
    import errno
    from webarchive_indexing.build import indexprep

    class Source:  # an index input whose reading meets the limit of open files
        path, name, malformed, lines_read, unsorted, rekey = "in.cdxj", "in.cdxj", 0, 0, None, False
        problems, notes = [], []

        def __init__(self):
            self.kind = kind

        def chunks(self, size=None):
            raise OSError(errno.EMFILE, "Too many open files", self.path)

        write = chunks

    with pytest.raises(OSError) as raised:
        indexprep.prepare([Source()], str(tmp_path), on_error="skip")
    assert raised.value.errno == errno.EMFILE


# -- 21.10: a table replaced in one step --------------------------------------------------

@pytest.fixture(scope="module")
def two_clusters(warcs, tmp_path_factory):
    """Clusters ``old`` (two of the archives) and ``new`` (all four), and the rows of their
    tables."""
    root = tmp_path_factory.mktemp("clusters")
    archives = sorted(str(path) for path in warcs.glob("*.warc.gz"))
    found = {}
    for name, given in (("old", archives[:2]), ("new", archives)):
        done = subprocess.run([*CLI, "build", *given, "-o", str(root / name), "--no-progress"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        found[name] = (root / name, len(lines_of(root / name)))
    assert found["new"][1] > found["old"][1]
    return found


def duckdb_rows(table):
    """The rows DuckDB reads in the table ``table``, as README's query of it reads them."""
    import duckdb
    return duckdb.sql(f"SELECT count(*) FROM read_parquet('{table}/*/*/*.parquet', "
                      "hive_partitioning = true)").fetchall()[0][0]


def export_table(cluster, table):
    return ["export", str(cluster), "--format", "parquet", "-o", str(table), "--no-progress"]


@pytest.mark.parametrize("when,prior,seen", [("before", True, "old"), ("after", True, "new"),
                                             ("before", False, None), ("after", False, "new")])
def test_a_table_is_replaced_in_one_step(two_clusters, tmp_path, when, prior, seen):
    """An export killed just before or just after its table takes the old one's place:
    DuckDB reads the old table or the new one whole, never none (it found none when the
    export was killed between the two renames that replaced a table)."""
    table = tmp_path / "t"
    if prior:
        done = subprocess.run([*CLI, *export_table(two_clusters["old"][0], table)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert duckdb_rows(table) == two_clusters["old"][1]
    killed = subprocess.run([sys.executable, str(HERE / "killpoint.py"), when, r"/t$",
                             *export_table(two_clusters["new"][0], table)],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    if seen:
        assert table.is_dir() and not table.is_symlink()
        assert duckdb_rows(table) == two_clusters[seen][1]
    else:
        assert not os.path.lexists(table)


def test_a_table_is_replaced_where_paths_cannot_be_exchanged(tmp_path, monkeypatch):
    """Where the file system cannot exchange paths, the table is replaced by two renames,
    and nothing of the old one or the new one is left beside it."""
    from webarchive_indexing.storage import local

    def no_exchange(first, second):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported", first, None, second)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "old").write_text("old")
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "new").write_text("new")
    monkeypatch.setattr(local, "exchange", no_exchange)
    local.replace_tree(str(tmp_path / "new"), str(tmp_path / "t"), str(tmp_path / "aside"))
    assert sorted(os.listdir(tmp_path)) == ["t"] and os.listdir(tmp_path / "t") == ["new"]
