"""Publishing a local cluster (issue 16, items 9-11 and 15): builds killed at every point
of their work, readers that hold an index while a rebuild publishes another, a moved
cluster, leftovers of killed runs, two builds into one output."""
import collections
import errno
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import pywb_lookup
from tables import assert_same_tables
from webarchive_indexing import cli
from webarchive_indexing.commands.build import build
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.zipnum.reader import open_cluster, search_range
from webarchive_indexing.zipnum.layout import write_cluster

HERE = Path(__file__).parent
OPTIONS = dict(shards=2, lines_per_block=20, runner="inline", progress=False)
ARGS = ["--shards", "2", "--lines-per-block", "20", "--runner", "inline", "--no-progress"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Two sets of archives: ``old`` (two WARCs) and ``new`` (those and one more), and
    each one's lines as a fresh build publishes them."""
    root = tmp_path_factory.mktemp("publish")
    make_corpus(root / "old", files=2, captures=60, seed=71)
    make_corpus(root / "more", files=1, captures=60, seed=72)
    for path in list(root.rglob("*.jsonl")):
        path.unlink()
    sets = {"old": [str(root / "old")], "new": [str(root / "old"), str(root / "more")]}
    lines, clean = {}, {}
    for name, given in sets.items():
        out = root / f"clean-{name}"
        build(given, str(out), BuildOptions(**OPTIONS))
        lines[name] = everything(out)
        clean[name] = out
    assert len(lines["new"]) > len(lines["old"]) > 100
    return {"sets": sets, "lines": lines, "clean": clean}


def everything(location):
    """Every line of the cluster at ``location``, as ``query`` reads it."""
    return list(open_cluster(str(location)).lookup_range(b"", b"\xff"))


def pywb_agrees(out, lines):
    """pywb's ZipNumIndexSource finds ``lines`` in the cluster in ``out``, host by host."""
    hosts = sorted({line.split(b")", 1)[0].decode() for line in lines} - {""})
    hosts = [host for host in hosts if ":" not in host]
    for host in hosts[::max(1, len(hosts) // 6)]:
        name = ".".join(reversed(host.split(",")))
        start, end = (key.encode() for key in search_range(name, "host"))
        want = [line for line in lines if start <= line < end]
        assert want and pywb_lookup(Path(out) / "cluster" / "cluster.idx", name, "host") == want, name


def tree(directory):
    """{relative path: bytes} of every file under ``directory``."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(Path(directory).rglob("*"))
            if p.is_file()}


def run_killed(when, pattern, argv, first=()):
    done = subprocess.run([sys.executable, str(HERE / "killpoint.py"), *first, when, pattern,
                           *argv],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]


# -- killed at every point: readers see the old cluster or the new one, the rerun is clean ---

KILL_POINTS = [
    ("before", r"/cdx/.*\.cdx\.gz$", "old"),                 # while indexing
    ("before", r"/cluster/build-00003/cdx-00001\.gz$", "old"),  # while writing shards
    ("before", r"/cluster/cluster\.loc$", "old"),            # a temporary .loc left
    ("after", r"/cluster/cluster\.loc$", "old"),             # both builds' shards in the .loc
    ("after", r"/cluster/cluster\.root$", "old"),            # the new root, the old index
    ("before", r"/cluster/cluster\.idx$", "old"),            # a temporary index left
    ("after", r"/cluster/cluster\.idx$", "new"),             # published, nothing cleared yet
]


@pytest.mark.parametrize("when,pattern,seen", KILL_POINTS,
                         ids=[f"{w}-{re.sub(r'[^a-z0-9]+', '-', p).strip('-')}" for w, p, _ in KILL_POINTS])
def test_a_build_killed_at_any_point(tmp_path, inputs, when, pattern, seen):
    out = tmp_path / "out"
    for _ in range(2):  # build-00001 (the one before the published one) and build-00002
        build(inputs["sets"]["old"], str(out), BuildOptions(**OPTIONS))
    run_killed(when, pattern, ["build", *inputs["sets"]["new"], "-o", str(out), *ARGS])
    # a reader sees a whole cluster: the published one, or the new one once its index is in
    assert everything(out) == inputs["lines"][seen]
    pywb_agrees(out, inputs["lines"][seen])

    # the next run clears what the killed one left and publishes what a clean build does
    summary = build(inputs["sets"]["new"], str(out), BuildOptions(**OPTIONS))
    assert summary.published and not summary.errors
    files = tree(out)
    assert not [name for name in files if os.path.basename(name).startswith(".")], list(files)
    # numbered after the published build (what the killed one left of build-00003 went
    # first); the build it replaced kept, the one before removed
    replaced, published = ("build-00002", "build-00003") if seen == "old" else ("build-00003", "build-00004")
    assert {name.split("/")[1] for name in files if name.startswith("cluster/build-")} == \
        {replaced, published}
    clean = tree(inputs["clean"]["new"] / "cluster")
    assert {n: d for n, d in files.items() if n.startswith(f"cluster/{published}/")} == \
        {f"cluster/{n.replace('build-00001', published)}": d for n, d in clean.items()
         if n.startswith("build-00001/")}
    assert files["cluster/cluster.idx"] == clean["cluster.idx"].replace(b"build-00001/",
                                                                         f"{published}/".encode())
    assert everything(out) == inputs["lines"]["new"]


def test_the_published_and_the_replaced_build_stay(tmp_path, inputs):
    out = tmp_path / "out"
    for n in range(1, 4):
        build(inputs["sets"]["old" if n % 2 else "new"], str(out), BuildOptions(**OPTIONS))
        builds = sorted(p.name for p in (out / "cluster").iterdir() if p.is_dir())
        assert builds == [f"build-{i:05d}" for i in range(max(1, n - 1), n + 1)]
    loc = (out / "cluster" / "cluster.loc").read_text().splitlines()
    assert [line.split("\t")[1].split("/")[0] for line in loc] == ["build-00003"] * 2 + ["build-00002"] * 2


# -- readers that loaded the index before a rebuild ----------------------------------------

def test_a_reader_of_the_replaced_index_goes_on_reading_it(tmp_path, inputs):
    """Issue 16 item 9: a local rebuild took the shards from under a running query (old
    offsets, new files). Shards have new names in every build, and the replaced build's
    stay, so what a reader has begun reads on as it began."""
    out = tmp_path / "out"
    build(inputs["sets"]["old"], str(out), BuildOptions(**OPTIONS))
    old = inputs["lines"]["old"]
    ours = open_cluster(str(out)).lookup_range(b"", b"\xff")
    first = next(ours)
    hosts = collections.Counter(line.split(b")", 1)[0].decode() for line in old)
    host = ".".join(reversed(next(h for h, _ in hosts.most_common() if ":" not in h).split(",")))
    from pywb.warcserver.index.zipnum import ZipNumIndexSource
    source = ZipNumIndexSource(str(out / "cluster" / "cluster.idx"), {"max_blocks": 100})
    pywb_lines = iter(source.load_index({"url": host, "matchType": "host"}))
    pywb_first = next(pywb_lines).to_text().encode()

    build(inputs["sets"]["new"], str(out), BuildOptions(**OPTIONS))
    assert [first, *ours] == old
    start, end = (k.encode() for k in search_range(host, "host"))
    assert [pywb_first, *(cdx.to_text().encode() for cdx in pywb_lines)] == \
        [line for line in old if start <= line < end]
    # a new lookup of the same pywb source sees the new cluster (it reads the .loc again
    # when it changed, and the index at every lookup)
    new = [line for line in inputs["lines"]["new"] if start <= line < end]
    assert [cdx.to_text().encode() for cdx in source.load_index({"url": host, "matchType": "host"})] == new
    assert everything(out) == inputs["lines"]["new"]


# -- a moved cluster ------------------------------------------------------------------------

def test_a_moved_cluster_is_read_where_it_is(tmp_path, inputs):
    """Issue 16 item 15: cluster.loc held absolute paths; after `mv` query and pywb failed."""
    out = tmp_path / "out"
    build(inputs["sets"]["old"], str(out), BuildOptions(**OPTIONS))
    moved = tmp_path / "elsewhere" / "index"
    moved.parent.mkdir()
    shutil.move(str(out), str(moved))
    assert everything(moved) == inputs["lines"]["old"]
    assert everything(moved / "cluster" / "cluster.idx") == inputs["lines"]["old"]
    pywb_agrees(moved, inputs["lines"]["old"])
    # the cluster/ directory alone, copied anywhere
    shutil.copytree(moved / "cluster", tmp_path / "copy" / "cluster")
    assert everything(tmp_path / "copy" / "cluster") == inputs["lines"]["old"]


def test_the_readme_repoints_cluster_loc_for_openwayback(tmp_path, inputs):
    """OpenWayback takes .loc locations as they are (relative ones from its working
    directory): the README's command writes them absolute."""
    out = tmp_path / "out"
    build(inputs["sets"]["old"], str(out), BuildOptions(**OPTIONS))
    readme = (HERE.parent / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("awk ") and "cluster.loc" in line)
    subprocess.run(["bash", "-c", command], cwd=out / "cluster", check=True)
    absolute = (out / "cluster" / "cluster-absolute.loc").read_text().splitlines()
    relative = (out / "cluster" / "cluster.loc").read_text().splitlines()
    assert [line.split("\t") for line in absolute] == \
        [[shard, str(out / "cluster" / location)] for shard, location in (l.split("\t") for l in relative)]
    assert all(os.path.isfile(line.split("\t")[1]) for line in absolute)


# -- earlier layouts and leftovers ------------------------------------------------------------

def test_a_cluster_published_directly_in_cluster_is_replaced_and_then_removed(tmp_path, inputs):
    """Shards directly in cluster/ (as finalize and earlier versions publish them), with an
    absolute .loc: the first build keeps them for readers of that index, the next removes them."""
    out = tmp_path / "out"
    write_cluster(inputs["lines"]["old"], str(out / "cluster"), [inputs["lines"]["old"][50]],
                  lines_per_block=20)
    (out / "cluster" / "cluster.loc").write_text(
        "".join(f"cdx-0000{i}.gz\t{out}/cluster/cdx-0000{i}.gz\n" for i in range(2)))
    old_idx = (out / "cluster" / "cluster.idx").read_bytes()
    assert everything(out) == inputs["lines"]["old"]
    build(inputs["sets"]["new"], str(out), BuildOptions(**OPTIONS))
    assert everything(out) == inputs["lines"]["new"]
    # a reader of the old index with the new .loc (its lines for the old shards come last)
    (tmp_path / "old.idx").write_bytes(old_idx)
    shutil.copy(out / "cluster" / "cluster.loc", tmp_path / "old.loc")
    assert everything(tmp_path / "old.idx") == inputs["lines"]["old"]
    build(inputs["sets"]["new"], str(out), BuildOptions(**OPTIONS))
    assert sorted(p.name for p in (out / "cluster").iterdir()) == \
        ["build-00001", "build-00002", "cluster.idx", "cluster.loc", "cluster.root"]


def test_leftovers_of_killed_runs_are_removed_by_the_next(tmp_path, inputs):
    out = tmp_path / "out"
    build(inputs["sets"]["old"], str(out), BuildOptions(**OPTIONS))
    leftovers = [out / ".cluster-build-x1" / "cdx-00000.gz", out / ".cluster-old-y2" / "cluster" / "c",
                 out / "cdx" / "old" / ".tmp-abc-x.cdx.gz", out / "cluster" / ".tmp-def-cluster.idx",
                 out / ".tmp-123-archives.txt", out / "cluster" / "build-00002" / "cdx-00000.gz"]
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left over")
    (out / "cdx" / "keep.tmp").write_bytes(b"not ours to remove")
    build(inputs["sets"]["old"], str(out), BuildOptions(**OPTIONS))
    assert not [p for p in leftovers if p.exists() and p.read_bytes() == b"left over"]
    assert not list(out.glob(".cluster-*")) and (out / "cdx" / "keep.tmp").exists()


# -- one build at a time --------------------------------------------------------------------

HOLDER = textwrap.dedent("""
    import sys, time
    from webarchive_indexing.storage import lock
    with lock.hold(sys.argv[1], "build"):
        print("locked", flush=True)
        time.sleep(120)
""")


def busy(command, directory, holder, pid):
    """The one line ``command`` prints when the ``holder`` command of process ``pid``
    writes into ``directory``."""
    return (rf"^webarchive-index {command}: {re.escape(str(directory))} is being written by "
            rf"'webarchive-index {holder}' \(process {pid} on "
            rf"{re.escape(socket.gethostname())}, started \d{{4}}-\d\d-\d\d [\d:]+ \w+\): "
            r"wait for it to end \(or stop it\), then run this again\n$")


def test_a_second_build_into_one_output_is_refused_naming_the_first(tmp_path, inputs, capsys):
    """Issue 16 item 11. The lock is the kernel's: a killed holder leaves none behind."""
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        code = cli.main(["build", *inputs["sets"]["old"], "-o", str(out), *ARGS])
        err = capsys.readouterr().err
        assert code == cli.EXIT_FAILED
        assert re.search(busy("build", out, "build", holder.pid), err), err
        assert sorted(os.listdir(out)) == [".webarchive-index.lock"]
    finally:
        holder.kill()
        holder.wait()
    # killed: its lock file is still there, but no lock
    assert (out / ".webarchive-index.lock").read_text()
    assert cli.main(["build", *inputs["sets"]["old"], "-o", str(out), *ARGS]) == cli.EXIT_OK
    assert not (out / ".webarchive-index.lock").exists()


# -- a table's directory (export --format parquet, build --parquet) ---------------------------

# While the table's second file is being written (the first one written, the second one's
# temporary file complete)
MID_WRITE = r"/\.table-build-[^/]+/.+/part-00001\.parquet$"


def export_args(location, table):
    return ["export", str(location), "--format", "parquet", "-o", str(table), "--no-progress"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory, inputs):
    """The tables of the clusters ``old`` and ``new``, exported by runs nothing disturbed."""
    root = tmp_path_factory.mktemp("tables")
    for name in ("old", "new"):
        assert cli.main(export_args(inputs["clean"][name], root / name)) == cli.EXIT_OK
    return root


TABLE_KILL_POINTS = [
    ("before", MID_WRITE, True, "old", True),
    ("before", MID_WRITE, False, None, True),
    ("before", r"/tables/t$", True, "old", True),   # about to exchange the new one with the old
    ("before", r"/tables/t$", False, None, True),
    ("after", r"/tables/t$", True, "new", True),    # exchanged, the old one not yet removed
    ("after", r"/tables/t$", False, "new", True),
    # where paths cannot be exchanged: the old table put aside, the new one not in place
    ("before", r"/tables/t$", True, None, False),
    ("after", r"/tables/t$", True, "new", False),
]


@pytest.mark.parametrize("when,pattern,prior,seen,exchange", TABLE_KILL_POINTS, ids=[
    f"{w}-{'write' if p == MID_WRITE else 'rename'}-{'replacing' if r else 'new'}"
    f"{'' if x else '-no-exchange'}" for w, p, r, _, x in TABLE_KILL_POINTS])
def test_an_export_killed_while_writing_its_table(tmp_path, inputs, tables, when, pattern, prior,
                                                  seen, exchange):
    """A killed export leaves the table as it was (or the new one, once in its place) and
    its directories beside it; the next run clears them and writes what a clean run does.
    Where paths cannot be exchanged, one killed with the old table put aside and the new
    one not yet in its place: the next run puts the old one back first (a run that then
    fails leaves it as it was)."""
    table = tmp_path / "tables" / "t"
    if prior:
        assert cli.main(export_args(inputs["clean"]["old"], table)) == cli.EXIT_OK
    run_killed(when, pattern, export_args(inputs["clean"]["new"], table),
               [] if exchange else ["--no-exchange"])
    if seen:
        assert_same_tables(tables / seen, table)
    else:
        assert not table.exists()
    left = sorted(os.listdir(table.parent))
    assert [name for name in left if name.startswith(".table-")] or (not prior and when == "after")
    if prior and seen is None:
        # a run that fails after clearing them (its cluster's keys are not sorted as its
        # lines, a control character sorting before the space after a key): the old table
        line = (b'com,a)/ 20240101000000 {"url": "http://a.com/", "filename": "f.warc.gz", '
                b'"offset": "0", "length": "9"}\n')
        write_cluster([line.replace(b")/", b")/\x01x"), line], str(tmp_path / "unsorted" / "cluster"),
                      [])
        assert cli.main(export_args(tmp_path / "unsorted", table)) == cli.EXIT_FAILED
        assert_same_tables(tables / "old", table)
    assert cli.main(export_args(inputs["clean"]["new"], table)) == cli.EXIT_OK
    assert sorted(os.listdir(table.parent)) == ["t"]
    assert_same_tables(tables / "new", table)


def test_one_writer_of_a_table_at_a_time(tmp_path, inputs, tables, capsys, monkeypatch):
    """A second writer of a table is refused, naming the first; a writer that goes on
    without a lock (a file system without locks) clears what killed writers left, never
    what a running one writes."""
    table, new = tmp_path / "tables" / "t", inputs["clean"]["new"]
    writer = subprocess.Popen([sys.executable, str(HERE / "killpoint.py"), "stop", MID_WRITE,
                               *export_args(new, table)], stderr=subprocess.PIPE, text=True)
    try:
        _, status = os.waitpid(writer.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)
        (writing,) = [name for name in os.listdir(table.parent) if name.startswith(".table-build-")]
        assert writing.startswith(f".table-build-{writer.pid}-") and writing.endswith("-t")
        listing = sorted(os.listdir(table.parent))
        assert listing == sorted([writing, ".t.webarchive-index.lock"])
        capsys.readouterr()
        assert cli.main(export_args(new, table)) == cli.EXIT_FAILED
        # (after the line saying what it was to export)
        err = capsys.readouterr().err.splitlines(True)
        assert len(err) == 2 and re.search(busy("export", table, "export", writer.pid), err[1])
        assert cli.main(["build", *inputs["sets"]["old"], "-o", str(tmp_path / "out"), *ARGS,
                         "--parquet", str(table)]) == cli.EXIT_FAILED
        assert re.search(busy("build", table, "export", writer.pid), capsys.readouterr().err)
        assert not (tmp_path / "out" / "archives.txt").exists()
        # nothing made, nothing of the writer's touched; another table beside it is written
        assert sorted(os.listdir(table.parent)) == listing
        assert cli.main(export_args(new, tmp_path / "tables" / "u")) == cli.EXIT_OK
        assert sorted(os.listdir(table.parent)) == sorted(listing + ["u"])

        # without locks: a killed writer's table goes, the running one's stays
        gone = subprocess.Popen(["true"])
        gone.wait()
        killed = table.parent / f".table-build-{gone.pid}-0badc0de-t"
        (killed / "crawl=x").mkdir(parents=True)

        def no_locks(fd, operation):
            raise OSError(errno.ENOLCK, "No locks available")
        monkeypatch.setattr(fcntl, "flock", no_locks)
        assert cli.main(export_args(new, table)) == cli.EXIT_OK
        monkeypatch.undo()
        assert not killed.exists() and (table.parent / writing / "crawl=clean-new").is_dir()
        assert_same_tables(tables / "new", table)
    finally:
        writer.send_signal(signal.SIGCONT)
        _, err = writer.communicate(timeout=120)
    assert writer.returncode == cli.EXIT_OK, err
    assert sorted(os.listdir(table.parent)) == ["t", "u"]
    assert_same_tables(tables / "new", table)
