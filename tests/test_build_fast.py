"""A build from CDX files with less work a line (issue 26, item 4).

* ``inputs/_linecheck.c``: the compiled check of a chunk of CDXJ lines takes exactly the
  lines its twin, the regular expression ``linecheck.ALL_WELL_FORMED["cdxj"]``, takes
  (crafted lines at every rule of the grammar, and random mutations of real lines), and an
  index input reads to the same lines and problems through either.
"""
import gzip
import random
import sys

import pytest

from webarchive_indexing.inputs import linecheck
from webarchive_indexing.inputs.sources import open_index

GOOD = (b'com,example)/ 20240101000000 {"url": "http://example.com/", "mime": "text/html", '
        b'"status": "200", "digest": "AAAA", "length": "1043", "offset": "333", '
        b'"filename": "a.warc.gz"}')

CRAFTED = [
    GOOD,
    b'k 1 {"offset": "1", "length": "2"}',
    b'k 1 {"length": 2, "offset": 0}',
    b'k 1 { \t"offset"\t:\t"1" , "length" :  2  }',
    b'k 1 {"offset": "1", "length": "2", "x": -1.5e+3, "y": true, "z": false, "w": null}',
    b'k 1 {"offset": "1", "length": "2", "u": "\\u00e9\\n\\"\\\\\\/\\b\\f\\r\\t"}',
    b'k\xc3\xa9 1 {"offset": "1", "length": "2", "s": "caf\xc3\xa9"}',
    b'k\x00\x0e\x1b\x7f 1 {"offset": "1", "length": "2"}',
    b'k 1 {"offset": "1", "length": "2", "offset": "x"}',
    b'k 1 {"offset": "x", "length": "2", "offset": "1"}',
    # refused
    b'',
    b'k 1 {}',
    b'k 1 {"offset": "1"}',
    b'k 1 {"length": "1"}',
    b'k 1 {"offset": 1.0, "length": 2}',
    b'k 1 {"offset": -1, "length": 2}',
    b'k 1 {"offset": 01, "length": 2}',
    b'k 1 {"offset": "", "length": 2}',
    b'k 1 {"offset": "1a", "length": 2}',
    b'k 1 {"offset": 1e5, "length": 2}',
    b'k 1 {"offset": 1, "length": 2,}',
    b'k 1 {"offset": 1 "length": 2}',
    b'k 1 {"offset": 1, "length": 2, "a": {"b": 1}}',
    b'k 1 {"offset": 1, "length": 2, "a": [1]}',
    b'k 1 {"offset": 1, "length": 2, "a": tru}',
    b'k 1 {"offset": 1, "length": 2, "a": 1.}',
    b'k 1 {"offset": 1, "length": 2, "a": 1e}',
    b'k 1 {"offset": 1, "length": 2, "a": 1e+}',
    b'k 1 {"offset": 1, "length": 2, "a": -}',
    b'k 1 {"offset": 1, "length": 2, "a": "\\x"}',
    b'k 1 {"offset": 1, "length": 2, "a": "\\u12g4"}',
    b'k 1 {"offset": 1, "length": 2, "a": "\\u123"}',
    b'k 1 {"offset": 1, "length": 2, "a": "tab\there"}',
    b'k 1 {"offset": 1, "length": 2, a: 1}',
    b'k 1 {"offset": 1, "length": 2}x',
    b'k 1 {"offset": 1, "length": 2} ',
    b'k 1 {"off\\u0073et": 1, "length": 2}',
    b'k 1  {"offset": 1, "length": 2}',
    b'k  1 {"offset": 1, "length": 2}',
    b'k x1 {"offset": 1, "length": 2}',
    b'k 1{"offset": 1, "length": 2}',
    b' 1 {"offset": 1, "length": 2}',
    b'k\x1c 1 {"offset": 1, "length": 2}',
    b'k\x0b 1 {"offset": 1, "length": 2}',
    b'k\t1 {"offset": 1, "length": 2}',
    b'k 1 {"offset": 1, "length": 2}}k 1 {"offset": 1, "length": 2}',
    b'k 1 {"offset": 1, "length": 2, "a": "open}',
]

# What mutations insert: the bytes the grammar turns on
ALPHABET = b' \t\r\x0c\x1d\x1f"\\{}:,.-+eE0123456789abfnrtu\x00\x1c\x7f\xc3\xa9\x0bxnull'


def expression(data):
    return linecheck.ALL_WELL_FORMED["cdxj"].fullmatch(data) is not None


@pytest.fixture(scope="module")
def compiled():
    assert linecheck.cdxj_well_formed is not None, \
        "inputs/_linecheck.c is not built: reinstall (pip install -e .) with a C compiler"
    return linecheck.cdxj_well_formed


def test_compiled_check_is_the_chunk_check_of_cdxj():
    assert linecheck.ALL_WELL_FORMED_MATCH["cdxj"] is linecheck.cdxj_well_formed


def test_compiled_check_takes_crafted_lines_as_the_expression(compiled):
    taken = 0
    for line in CRAFTED:
        for data in (line + b"\n", line, line + b"\n" + GOOD + b"\n", GOOD + b"\n" + line + b"\n"):
            assert compiled(data) == expression(data), data
        taken += expression(line + b"\n")
    assert taken == 10  # the crafted lines take both answers
    assert compiled(b"") and compiled(memoryview(GOOD + b"\n")[:])


def mutated(rng, line):
    data = bytearray(line)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        kind = rng.random()
        if kind < 0.4 and at < len(data):
            data[at] = rng.choice(ALPHABET)
        elif kind < 0.7:
            data[at:at] = bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4)))
        else:
            del data[at:at + rng.randint(1, 6)]
    return bytes(data).replace(b"\n", b"")


def test_compiled_check_takes_random_lines_as_the_expression(compiled):
    rng = random.Random(26)
    seeds = [line for line in CRAFTED if line]
    answers = set()
    for _ in range(20000):
        line = mutated(rng, rng.choice(seeds))
        data = line + b"\n"
        answer = expression(data)
        assert compiled(data) == answer, data
        answers.add(answer)
    assert answers == {True, False}


def test_index_input_reads_the_same_through_either_check(tmp_path, monkeypatch, compiled):
    rng = random.Random(4)
    lines = sorted({mutated(rng, GOOD) if rng.random() < 0.3 else
                    GOOD.replace(b"example", b"ex%05d" % n) for n in range(3000)})
    path = tmp_path / "in.cdxj.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))

    def read():
        source = open_index(str(path))
        return [list(chunk) for chunk in source.chunks(4096)], source.problems, source.malformed

    with_compiled = read()
    monkeypatch.setitem(linecheck.ALL_WELL_FORMED_MATCH, "cdxj",
                        linecheck.ALL_WELL_FORMED["cdxj"].fullmatch)
    assert read() == with_compiled
    assert with_compiled[2] > 0 and sum(map(len, with_compiled[0])) > 2000


def test_run_writer_writes_a_large_chunk_in_pieces_of_its_index(tmp_path, monkeypatch):
    """A merge hands RunWriter chunks of tens of MB; it writes them an index entry's lines
    at a time (no copy of the whole chunk), the same file and index as one write."""
    from webarchive_indexing.build import runs

    lines = sorted(b"k%07d %s" % (n, b"x" * (n % 50)) for n in range(10000))
    chunks = [lines[:1], lines[1:700], [], lines[700:]]
    writes = []

    class Recording:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            writes.append(len(data))
            return self.fh.write(data)

        def close(self):
            self.fh.close()

    with runs.RunWriter(str(tmp_path / "a.run")) as out:
        out._fh = Recording(out._fh)
        for chunk in chunks:
            out.write(chunk)
    data = (tmp_path / "a.run").read_bytes()
    assert data == b"".join(line + b"\n" for line in lines)
    assert max(writes) <= max(map(len, lines)) * runs.INDEX_EVERY + runs.INDEX_EVERY
    index = runs.array.array("Q", (tmp_path / "a.run.idx").read_bytes())
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    assert list(index) == starts[:len(lines):runs.INDEX_EVERY]
    run = out.run
    assert (run.lines, run.size) == (len(lines), len(data))
    assert run.position(lines[5000]) == (5000, starts[5000])


def shard_of_blocks(path, blocks, lines_per_block, seed=0):
    """A shard file of gzip blocks of random lines; its ``Block``s and lines."""
    import os as _os
    from webarchive_indexing.zipnum import layout
    from webarchive_indexing.zipnum.shardrun import Block

    rng = random.Random(seed)
    lines = sorted(b"k%08d %s" % (rng.randrange(10 ** 8), _os.urandom(60).hex().encode())
                   for _ in range(blocks * lines_per_block))
    found, offset = [], 0
    with open(path, "wb") as out:
        for start in range(0, len(lines), lines_per_block):
            member = layout.gzip_block([b"\n".join(lines[start:start + lines_per_block]) + b"\n"],
                                       "libdeflate-5")
            out.write(member)
            found.append(Block(layout.block_key(lines[start]), offset, len(member)))
            offset += len(member)
    return found, lines


def test_a_shard_is_read_a_block_at_a_time(tmp_path):
    """An update reads each old shard a fetch of blocks at a time; the fetch is inflated a
    block at a time, never into one buffer of its whole size beside its lines."""
    import tracemalloc
    from webarchive_indexing.zipnum.shardrun import ShardRun

    blocks, lines = shard_of_blocks(tmp_path / "cdx-00000.gz", 12, 1000)
    run = ShardRun(0, str(tmp_path / "cdx-00000.gz"), blocks, 1000, 1000)
    assert [line for chunk in run.chunks() for line in chunk] == lines
    size = sum(map(len, lines))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fetched = blocks[-1].offset + blocks[-1].length
        read = run._inflate(0, len(blocks))
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert read == lines
    held = sum(map(sys.getsizeof, read)) + sys.getsizeof(read)
    # besides its lines: the fetch, a block's text and its lines' copy
    assert peak - held < 2 * fetched + 3 * size // len(blocks), (peak, held, fetched, size)


def test_a_shards_blocks_read_where_the_index_places_them(tmp_path):
    """Bytes between blocks that the index passes over are not read; a block cut short,
    longer than one gzip member, or not a gzip member, and a block the index places
    outside the shard, are a damaged cluster."""
    from webarchive_indexing.zipnum.shardrun import Block, ClusterChanged, ShardRun

    path = tmp_path / "cdx-00000.gz"
    blocks, lines = shard_of_blocks(path, 3, 10)
    data = path.read_bytes()
    cut = blocks[1].offset

    def moved(by, start=1):
        return [b._replace(offset=b.offset + (by if i >= start else 0)) for i, b in enumerate(blocks)]

    for changed, placed in ((data[:cut] + b"\0\0\0" + data[cut:], moved(3)),
                            (data + b"xyz", blocks),
                            (data[:cut] + b"junk" + data[cut:], moved(4))):
        path.write_bytes(changed)
        assert ShardRun(0, str(path), placed, 10, 10)._inflate(0, 3) == lines
        assert ShardRun(0, str(path), placed, 10, 10)._inflate(1, 2) == lines[10:20]
    longer = [*blocks[:2], blocks[2]._replace(length=blocks[2].length + 1)]
    backwards = [blocks[1], blocks[0]._replace(offset=blocks[1].offset - 5)]
    for changed, placed in ((data[:-3], blocks), (data + b"xyz", longer),
                            (data[:cut] + b"x" + data[cut:], blocks),
                            (data, [*blocks, Block(b"z", len(data) + 10, 20)]),
                            (data, backwards)):
        path.write_bytes(changed)
        with pytest.raises(ClusterChanged, match="cannot be read"):
            ShardRun(0, str(path), placed, 10, 10)._inflate(0, len(placed))


def test_compiled_check_takes_random_json_blocks_as_the_expression(compiled):
    """Lines made of the grammar's parts, valid and nearly valid, so that many are taken."""
    rng = random.Random(7)

    def blank():
        return rng.choice([b"", b"", b" ", b"\t", b"  ", b" \t"])

    def string():
        return b'"' + b"".join(rng.choice([b"a", b"\\n", b"\\u00e9", b'\\"', b"\xc3\xa9", b"/",
                                           b"\\/", b" ", b"\\x", b"\x7f", b"\\u12", b"\x01"])
                               for _ in range(rng.randint(0, 6))) + b'"'

    def value():
        return rng.choice([string(), rng.choice([b"0", b"12", b"-3", b"1.5", b"1e5", b"-0.0E+2",
                                                 b"01", b"1.", b"-", b"1e"]),
                           rng.choice([b"true", b"false", b"null", b"nul"])])

    def member(key, value):
        return key + blank() + b":" + blank() + value + blank()

    answers = []
    for _ in range(10000):
        members = [member(rng.choice([string(), b'"url"', b'"offset"', b'"length"']), value())
                   for _ in range(rng.randint(0, 5))]
        for name, values in ((b'"offset"', [b'"123"', b"0", b"45", b'""', b"1.0", b'"1 "']),
                             (b'"length"', [b'"9"', b"0", b"7", b"-1"])):
            if rng.random() < 0.8:
                members.insert(rng.randint(0, len(members)), member(name, rng.choice(values)))
        block = b"{" + blank() + b",".join(m if i == 0 else blank() + m
                                           for i, m in enumerate(members)) + b"}"
        data = b"%s %s %s\n" % (rng.choice([b"com,example)/", b"k\xc3\xa9", b"a\x00b"]),
                                rng.choice([b"2024", b"1", b"20x"]), block)
        answers.append(expression(data))
        assert compiled(data) == answers[-1], data
    assert 0.02 < sum(answers) / len(answers) < 0.5
