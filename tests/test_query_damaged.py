"""A damaged cluster gives a clear error, never a wrong answer (issue 16, items 8 and 9):
for every query, either the right lines or DamagedCluster/OSError; through `query`, exit
status 1 and one line naming the file and what is wrong, no traceback."""
import random
import shutil

import pytest

from test_query import LINES, QUERIES
from webarchive_indexing.cli import main
from webarchive_indexing.zipnum.reader import Cluster, DamagedCluster, search_range
from webarchive_indexing.zipnum.layout import root_index, write_cluster

SOME_QUERIES = QUERIES[::5] + [("com", "domain"), ("org", "domain"), ("example.com", "domain")]
EVERYTHING = (b"\x00", b"\xff")


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    out = tmp_path_factory.mktemp("good")
    write_cluster(LINES, out, [LINES[len(LINES) // 2]], lines_per_block=7, root_slice_bytes=2000)
    return out


def idx_lines(cluster_dir):
    return (cluster_dir / "cluster.idx").read_bytes().splitlines(keepends=True)


def swap(lines, i, j):
    lines = list(lines)
    lines[i], lines[j] = lines[j], lines[i]
    return lines


def repoint(lines, i, j):
    """Line i with the shard, offset and length of line j."""
    key, _, _, _, lineno = lines[i].split(b"\t")
    _, shard, offset, length, _ = lines[j].split(b"\t")
    return [*lines[:i], b"\t".join([key, shard, offset, length, lineno]), *lines[i + 1:]]


def field(lines, i, column, change):
    fields = lines[i].rstrip(b"\n").split(b"\t")
    fields[column] = change(fields[column])
    return [*lines[:i], b"\t".join(fields) + b"\n", *lines[i + 1:]]


def shuffled(lines):
    lines = list(lines)
    random.Random(4).shuffle(lines)
    return lines


MIDDLE = 150  # an index line in the first shard; the cluster has ~340
DAMAGED_INDEXES = {
    "two lines swapped": lambda lines: swap(lines, MIDDLE, MIDDLE + 1),
    "two far lines swapped": lambda lines: swap(lines, 40, 250),
    "a line dropped": lambda lines: lines[:MIDDLE] + lines[MIDDLE + 1:],
    "a line pointing at another block": lambda lines: repoint(lines, MIDDLE, MIDDLE + 3),
    "reversed": lambda lines: lines[::-1],
    "random order": shuffled,
    "an offset off by one": lambda lines: field(lines, MIDDLE, 2, lambda v: b"%d" % (int(v) + 1)),
    "a length too long": lambda lines: field(lines, MIDDLE, 3, lambda v: b"%d" % (int(v) + 9)),
    "a length too short": lambda lines: field(lines, MIDDLE, 3, lambda v: b"%d" % (int(v) - 9)),
    "a wrong shard name": lambda lines: field(lines, MIDDLE, 1, lambda v: b"cdx-00009.gz"),
    "a text file": lambda lines: [b"Just some text,\n", b"not an index at all.\n"] * 50,
}


def answers_right_or_fails(cluster_dir):
    """Every query's answer is right or an error; how many were errors."""
    failed = 0
    ranges = [tuple(k.encode() for k in search_range(url, mt)) for url, mt in SOME_QUERIES] + [EVERYTHING]
    for start, end in ranges:
        expected = [line for line in LINES if start <= line < end]
        for name, ask, want in [("forwards", lambda: list(Cluster(cluster_dir).lookup_range(start, end)), expected),
                                ("backwards", lambda: list(Cluster(cluster_dir).lookup_range_back(start, end)), expected[::-1]),
                                ("count", lambda: Cluster(cluster_dir).count_range(start, end), len(expected))]:
            try:
                got = ask()
            except OSError as exc:  # DamagedCluster, or a shard that is not there
                assert "cluster" in str(exc) or "cdx-0000" in str(exc)
                failed += 1
                continue
            assert got == want, (name, start, end)
    return failed


@pytest.mark.parametrize("root", [True, False], ids=["root", "no-root"])
@pytest.mark.parametrize("damage", list(DAMAGED_INDEXES))
def test_damaged_index_fails_rather_than_answer_wrongly(good, tmp_path, damage, root):
    cluster_dir = tmp_path / "c"
    shutil.copytree(good, cluster_dir)
    idx = b"".join(DAMAGED_INDEXES[damage](idx_lines(good)))
    (cluster_dir / "cluster.idx").write_bytes(idx)
    (cluster_dir / "cluster.root").unlink()
    if root and damage != "a text file":
        (cluster_dir / "cluster.root").write_bytes(root_index(idx, 2000))
    assert answers_right_or_fails(cluster_dir) > 0


def test_damaged_shard_fails_rather_than_answer_wrongly(good, tmp_path):
    cluster_dir = tmp_path / "c"
    shutil.copytree(good, cluster_dir)
    shard = bytearray((cluster_dir / "cdx-00000.gz").read_bytes())
    for at in (len(shard) // 3, len(shard) // 2):
        shard[at] ^= 0x40
    (cluster_dir / "cdx-00000.gz").write_bytes(bytes(shard))
    assert answers_right_or_fails(cluster_dir) > 0
    with pytest.raises(DamagedCluster, match=r"cdx-00000.gz at offset \d+ \(\d+ bytes\): not a gzip block"):
        list(Cluster(cluster_dir).lookup_range(*EVERYTHING))


def test_shards_replaced_under_a_reader(good, tmp_path):
    """A cluster rebuilt in place (new shards, new index) while a lookup streams: the
    lookup ends with a clear error, or its answer is still right."""
    cluster_dir = tmp_path / "c"
    shutil.copytree(good, cluster_dir)
    for lines_per_block in (3, 7, 11):
        lookup = Cluster(cluster_dir).lookup_range(*EVERYTHING)
        got = [next(lookup) for _ in range(100)]
        write_cluster(LINES, cluster_dir, [LINES[len(LINES) // 3]], lines_per_block=lines_per_block,
                      root_slice_bytes=1000)
        with pytest.raises(DamagedCluster, match="changed while being read|not a gzip block|does not start with|follows"):
            got += list(lookup)
    # the new cluster, opened anew, answers right
    assert list(Cluster(cluster_dir).lookup_range(*EVERYTHING)) == LINES


@pytest.mark.parametrize("damage", ["two lines swapped", "a line dropped", "a text file", "a length too long"])
def test_query_command_says_what_is_wrong(good, tmp_path, capsys, damage):
    cluster_dir = tmp_path / "c"
    shutil.copytree(good, cluster_dir)
    (cluster_dir / "cluster.idx").write_bytes(b"".join(DAMAGED_INDEXES[damage](idx_lines(good))))
    (cluster_dir / "cluster.root").unlink()
    status = main(["query", str(cluster_dir), "*.com"])
    out, err = capsys.readouterr()
    assert status == 1, err
    assert err.startswith("webarchive-index query: ") and len(err.splitlines()) == 1
    assert "cluster.idx" in err and "Traceback" not in err


def test_query_command_on_a_file_that_is_no_index(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("# A project\n\nSome words, and more words.\n" * 20)
    assert main(["query", str(readme), "example.com"]) == 1
    err = capsys.readouterr().err
    assert "is not a ZipNum cluster.idx" in err and "README.md" in err
