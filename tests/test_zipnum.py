"""Tests of the ZipNum writer: block format, offsets, numbering, cluster layout."""

import bisect
import gzip
import io
import itertools
import os
import zlib

import pytest

from webarchive_indexing.zipnum.layout import (LINES_PER_BLOCK, ShardWriter, block_key,
                                               gzip_block, idx_line, loc_line, number_parts,
                                               part_name, shard_name, write_cluster)

# zlib-ng (some distributions' zlib) emits different, equally valid deflate streams
stock_zlib = pytest.mark.skipif("zlib-ng" in zlib.ZLIB_RUNTIME_VERSION, reason="golden bytes are stock zlib's")


def cdxj(i):
    """A sorted-by-i CDXJ line."""
    return b'com,example)/page/%05d 20240101%06d {"url": "http://example.com/page/%05d", "status": "200"}\n' % (i, i, i)


LINES = [cdxj(i) for i in range(10)]


def read_range(path, offset, length):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


def parse_idx(content):
    return [line.split(b"\t") for line in content.splitlines()]


def test_names():
    assert shard_name(0) == "cdx-00000.gz"
    assert shard_name(299) == "cdx-00299.gz"
    assert part_name(0) == "part-00000"
    assert part_name(42) == "part-00042"
    assert LINES_PER_BLOCK == 3000


def test_block_key():
    assert block_key(b'com,example)/ 20240101000000 {"url": "http://example.com/"}\n') == b"com,example)/ 20240101000000"
    cdx11 = b"com,example)/ 20240101000000 http://example.com/ text/html 200 AAAA - - 100 0 f.warc.gz\n"
    assert block_key(cdx11) == b"com,example)/ 20240101000000"
    assert block_key(b"com,example)/ 20240101000000\n") == b"com,example)/ 20240101000000"


def test_idx_line_golden():
    assert idx_line(b"com,example)/ 20240101000000", "cdx-00000.gz", 0, 186928) == (
        b"com,example)/ 20240101000000\tcdx-00000.gz\t0\t186928\n"
    )
    # Common Crawl's cluster.idx line
    assert idx_line(b"0,1,184,137)/1clickdirect 20240712052032", "cdx-00000.gz", 0, 186928, 1) == (
        b"0,1,184,137)/1clickdirect 20240712052032\tcdx-00000.gz\t0\t186928\t1\n"
    )


def test_gzip_block_round_trip_and_reproducible():
    block = gzip_block(LINES)
    assert zlib.decompress(block, wbits=31) == b"".join(LINES)
    assert gzip.decompress(block) == b"".join(LINES)
    assert gzip_block(LINES) == block
    assert gzip_block(iter(LINES)) == block
    assert block[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"  # no name, mtime 0, unix


def test_gzip_block_empty_is_valid_member():
    assert gzip.decompress(gzip_block([])) == b""


@stock_zlib
def test_gzip_block_golden():
    assert gzip_block([b"com,example)/ 20240101000000 {}\n"]).hex() == (
        "1f8b08000000000000034bcecfd549ad48cc2dc849d5d45730323032313004423050a8aee5020096ab779b20000000"
    )


class RecordingFile(io.BytesIO):
    def __init__(self):
        super().__init__()
        self.writes = []

    def write(self, data):
        self.writes.append(len(data))
        return super().write(data)


def test_shard_writer_blocks_of_3_over_10_lines():
    out = RecordingFile()
    writer = ShardWriter(out, "cdx-00007.gz", lines_per_block=3)
    for n, line in enumerate(LINES, 1):
        writer.add(line)
        # a block is written as soon as it is full: at most one block buffered
        assert len(out.writes) == n // 3
    part = writer.close()

    data = out.getvalue()
    entries = parse_idx(part)
    assert [len(e) for e in entries] == [4] * 4  # no lineno in part files
    blocks = [zlib.decompress(data[int(off):int(off) + int(length)], wbits=31) for _, _, off, length in entries]
    assert blocks == [b"".join(LINES[i:i + 3]) for i in (0, 3, 6, 9)]
    assert [e[0] for e in entries] == [block_key(LINES[i]) for i in (0, 3, 6, 9)]
    assert {e[1] for e in entries} == {b"cdx-00007.gz"}
    # members are contiguous and cover the shard
    assert [int(e[2]) for e in entries] == [0, *itertools.accumulate(int(e[3]) for e in entries[:-1])]
    assert writer.lines == 10
    assert writer.blocks == 4
    assert writer.bytes_written == len(data) == sum(out.writes)
    assert gzip.decompress(data) == b"".join(LINES)


def test_shard_writer_offsets_point_at_members_on_disk(tmp_path):
    path = tmp_path / "cdx-00000.gz"
    with open(path, "wb") as out:
        writer = ShardWriter(out, "cdx-00000.gz", lines_per_block=4)
        for line in LINES:
            writer.add(line)
        part = writer.close()
    got = []
    for key, _, off, length in parse_idx(part):
        # dd the range, gunzip it: exactly one block whose first line has the key
        block = gzip.decompress(read_range(path, int(off), int(length)))
        assert block.startswith(key + b" ")
        got.append(block)
    assert got == [b"".join(LINES[0:4]), b"".join(LINES[4:8]), b"".join(LINES[8:10])]


def test_shard_writer_exact_multiple_and_empty():
    out = io.BytesIO()
    writer = ShardWriter(out, "cdx-00000.gz", lines_per_block=5)
    for line in LINES:
        writer.add(line)
    assert len(parse_idx(writer.close())) == 2

    out = io.BytesIO()
    writer = ShardWriter(out, "cdx-00001.gz")
    assert writer.close() == b""
    assert out.getvalue() == b""
    assert (writer.lines, writer.blocks, writer.bytes_written) == (0, 0, 0)


def test_shard_writer_rejects_bad_input():
    writer = ShardWriter(io.BytesIO(), "cdx-00000.gz")
    with pytest.raises(ValueError, match="newline"):
        writer.add(LINES[0].rstrip(b"\n"))
    writer.add(LINES[5])
    with pytest.raises(ValueError, match="not sorted"):
        writer.add(LINES[4])
    writer.add(LINES[5])  # duplicates are kept
    with pytest.raises(ValueError):
        ShardWriter(io.BytesIO(), "cdx-00000.gz", lines_per_block=0)


def test_number_parts_across_shards():
    part0 = idx_line(b"a 1", "cdx-00000.gz", 0, 10) + idx_line(b"b 1", "cdx-00000.gz", 10, 12)
    part2 = idx_line(b"d 1", "cdx-00002.gz", 0, 7) + idx_line(b"e 1", "cdx-00002.gz", 7, 9) + idx_line(b"f 1", "cdx-00002.gz", 16, 3)
    lines = list(number_parts([part0, b"", part2]))
    assert lines == [
        b"a 1\tcdx-00000.gz\t0\t10\t1\n",
        b"b 1\tcdx-00000.gz\t10\t12\t2\n",
        b"d 1\tcdx-00002.gz\t0\t7\t3\n",
        b"e 1\tcdx-00002.gz\t7\t9\t4\n",
        b"f 1\tcdx-00002.gz\t16\t3\t5\n",
    ]
    # a part file without its final newline numbers the same
    assert list(number_parts([part0.rstrip(b"\n"), part2])) == [
        line.rsplit(b"\t", 1)[0] + b"\t%d\n" % n for n, line in enumerate(lines, 1)
    ]
    with pytest.raises(ValueError, match="part-file"):
        list(number_parts([lines[0]]))  # already numbered


def test_loc_line():
    assert loc_line("cdx-00000.gz", "/data/cluster/cdx-00000.gz") == b"cdx-00000.gz\t/data/cluster/cdx-00000.gz\n"
    assert loc_line("cdx-00001.gz", "/a/cdx-00001.gz", "s3://bucket/c/cdx-00001.gz") == (
        b"cdx-00001.gz\t/a/cdx-00001.gz\ts3://bucket/c/cdx-00001.gz\n"
    )
    # relative to the .loc's directory, as pywb resolves them: the cluster can be moved
    assert loc_line("b-1/cdx-00000.gz", "b-1/cdx-00000.gz") == b"b-1/cdx-00000.gz\tb-1/cdx-00000.gz\n"
    for outside in ("../x/cdx-00000.gz", "a/../../cdx-00000.gz", ""):
        with pytest.raises(ValueError, match="outside the .loc's directory"):
            loc_line("cdx-00000.gz", outside)
    with pytest.raises(ValueError):
        loc_line("cdx-00000.gz")
    with pytest.raises(ValueError, match="tab"):
        loc_line("cdx-00000.gz", "/a\tb")


def test_write_cluster_with_empty_shard(tmp_path, monkeypatch):
    lines = [cdxj(i) for i in range(23)]
    # shard 0: lines 0-9; shard 1: empty; shard 2: lines 10 (== a split) to 22
    splits = [cdxj(9) + b"\x00", cdxj(9) + b"\x01", cdxj(10)]
    monkeypatch.chdir(tmp_path)
    stats = write_cluster(iter(lines), "out", splits, lines_per_block=4)  # relative dir on purpose
    out = tmp_path / "out"

    assert stats == {"shards": 4, "lines": 23, "blocks": 3 + 0 + 0 + 4, "bytes": stats["bytes"]}
    assert stats["bytes"] == sum(os.path.getsize(out / shard_name(i)) for i in range(4))
    assert os.path.getsize(out / shard_name(1)) == 0
    assert os.path.getsize(out / shard_name(2)) == 0
    assert (out / part_name(1)).read_bytes() == b""

    for i in range(4):
        data = (out / shard_name(i)).read_bytes()
        expected = [line for line in lines if bisect.bisect_right(splits, line) == i]
        assert (gzip.decompress(data) if data else b"") == b"".join(expected)

    idx = (out / "cluster.idx").read_bytes()
    parts = b"".join((out / part_name(i)).read_bytes() for i in range(4))
    assert idx == b"".join(number_parts([parts]))
    entries = parse_idx(idx)
    assert [int(e[4]) for e in entries] == list(range(1, 8))
    assert [e[1] for e in entries] == [b"cdx-00000.gz"] * 3 + [b"cdx-00003.gz"] * 4
    assert [e[0] for e in entries] == [block_key(lines[i]) for i in (0, 4, 8, 10, 14, 18, 22)]
    for key, shard, off, length, _ in entries:
        assert gzip.decompress(read_range(out / shard.decode(), int(off), int(length))).startswith(key + b" ")

    loc = (out / "cluster.loc").read_bytes().splitlines()
    assert loc == [b"%s\t%s" % (shard_name(i).encode(), shard_name(i).encode()) for i in range(4)]


def test_write_cluster_no_splits_no_lines(tmp_path):
    assert write_cluster([], tmp_path, []) == {"shards": 1, "lines": 0, "blocks": 0, "bytes": 0}
    assert (tmp_path / "cdx-00000.gz").read_bytes() == b""
    assert (tmp_path / "cluster.idx").read_bytes() == b""
    assert (tmp_path / "cluster.loc").read_bytes() == b"cdx-00000.gz\tcdx-00000.gz\n"


def test_write_cluster_is_reproducible(tmp_path):
    for name in ("a", "b"):
        write_cluster(LINES, tmp_path / name, [LINES[4]], lines_per_block=3)
    for name in [shard_name(0), shard_name(1), part_name(0), part_name(1), "cluster.idx"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_write_cluster_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="strictly increasing"):
        write_cluster(LINES, tmp_path, [LINES[5], LINES[5]])
    with pytest.raises(ValueError, match="not sorted"):
        write_cluster([LINES[6], LINES[2]], tmp_path / "x", [LINES[5]])  # across shards
    with pytest.raises(ValueError, match="not sorted"):
        write_cluster([LINES[3], LINES[2]], tmp_path / "y", [LINES[5]])  # within a shard


@stock_zlib
def test_write_cluster_golden(tmp_path):
    lines = sorted(b'com,example)/ 2024010%d000000 {"n": "%d"}\n' % (i % 10, i) for i in range(5))
    assert write_cluster(lines, tmp_path, [lines[3]], lines_per_block=2) == {
        "shards": 2, "lines": 5, "blocks": 3, "bytes": 186,
    }
    assert (tmp_path / "cluster.idx").read_bytes() == (
        b"com,example)/ 20240100000000\tcdx-00000.gz\t0\t64\t1\n"
        b"com,example)/ 20240102000000\tcdx-00000.gz\t64\t56\t2\n"
        b"com,example)/ 20240103000000\tcdx-00001.gz\t0\t66\t3\n"
    )
