"""Sorted runs (webarchive_indexing.build.runs): CDX lines read as mrjob's jobs read them, order
checks, the k-way merge, run files and their index, sorting in bounded memory."""
import bisect
import gzip
import random

import pytest
from mrjob.protocol import RawValueProtocol
from mrjob.util import to_lines

from webarchive_indexing.build import runs
from webarchive_indexing.cdx import cdxfile
from webarchive_indexing.cdx.cdxline import is_cdx_line


def mrjob_view(data):
    """The CDX lines a job's mapper gets from a CDX file's bytes, as UTF-8: mrjob's own
    line splitting and protocol, then the jobs' filter."""
    protocol = RawValueProtocol()
    lines = []
    for raw in to_lines(iter([data])):
        _, text = protocol.read(raw.rstrip(b"\r\n"))
        if is_cdx_line(text):
            lines.append(text.encode("utf-8"))
    return lines


AWKWARD = b"".join([
    b" CDX N b a m s k r M S V g\n",
    b"com,example)/ 20240101000000 {\"url\": \"http://example.com/\"}\n",
    b"\n",
    b"com,example)/a 20240101000000 x\r\n",          # \r\n ending
    b"com,example)/b 20240101000000 x\r\r\n",        # two \r
    b"com,example)/c\r 20240101000000 x\n",          # \r inside the key: not a CDX line
    b"com,example)/caf\xe9 20240101000000 latin-1\n",  # not UTF-8: read as latin-1
    b"com,example)/caf\xc3\xa9 20240101000000 utf-8\n",
    b"com,example)/\xc2\x85x 20240101000000 NEL in the key\n",   # U+0085 is whitespace in str
    b"com,example)/\x85x 20240101000000 latin-1 NEL\n",
    b"com,example)/\xa0x 20240101000000 latin-1 NBSP\n",
    b"com,example)/\x1cx 20240101000000 FS in the key\n",       # \x1c is whitespace in str
    b"com,example)/d \xd9\xa1\xd9\xa2 arabic-indic digits\n",  # str's \d matches them
    b"com,example)/e 2024 \n",
    b"com,example)/f 2024\n",                        # no space after the timestamp
    b"\tcom,example)/g 2024 leading tab\n",
    b"errors: {\"file\": 1}\n",
    b"com,example)/z 20240101000000 last line without a newline",
])


@pytest.mark.parametrize("chunk_bytes", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_read_chunks_gives_what_mrjobs_mappers_get(tmp_path, chunk_bytes, compress):
    path = tmp_path / ("x.cdx.gz" if compress else "x.cdx")
    path.write_bytes(gzip.compress(AWKWARD) if compress else AWKWARD)
    got = [line for chunk in cdxfile.read_chunks(str(path), chunk_bytes) for line in chunk]
    assert got == mrjob_view(AWKWARD)
    assert b"com,example)/caf\xc3\xa9 20240101000000 latin-1" in got
    assert len(got) == 8 and got[-1] == b"com,example)/z 20240101000000 last line without a newline"
    assert not any(b"NEL" in line or b"NBSP" in line or b"FS" in line for line in got)


def test_the_ascii_filter_is_the_jobs_filter_on_every_ascii_byte():
    for byte in range(128):
        char = bytes([byte])
        for line in (b"a" + char + b"b 1 x", b"ab " + char + b" x", b"ab 1" + char + b"x",
                     char + b"b 1 x", b"ab 1 " + char):
            if b"\n" in line:
                continue
            fast = cdxfile.cdx_lines([line], ascii_only=True, returns=False) == [line]
            assert fast == is_cdx_line(line.decode("ascii")), line


def test_checked_raises_before_the_first_chunk_out_of_order():
    good = [[b"a", b"b"], [b"b", b"c"]]
    assert list(runs.checked(good, "f")) == good
    passed = []
    with pytest.raises(runs.NotSorted, match="f is not sorted: b'a'"):
        for chunk in runs.checked([[b"a", b"c"], [b"a"]], "f"):
            passed.append(chunk)
    assert passed == [[b"a", b"c"]]
    with pytest.raises(runs.NotSorted, match="b'b'"):
        list(runs.checked([[b"a", b"c", b"b"]], "g"))


def chunked(lines, rng):
    chunks, i = [], 0
    while i < len(lines):
        n = rng.randint(0, 9)
        chunks.append(lines[i:i + n])
        i += n
    return chunks


@pytest.mark.parametrize("seed", range(20))
def test_merge_equals_sorting_everything(seed):
    rng = random.Random(seed)
    alphabet = [b"a", b"ab", b"b", b"ba", b"\xc3\xa9", b"a\t", b"a "]
    streams = []
    for _ in range(rng.randint(0, 7)):
        lines = sorted(rng.choice(alphabet) + rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        streams.append(chunked(lines, rng))
    merged = list(runs.merge(streams))
    assert [line for chunk in merged for line in chunk] == sorted(
        line for stream in streams for chunk in stream for line in chunk)
    assert all(merged), "no empty chunks"


def test_merge_closes_streams_left_unread():
    closed = []

    def stream(name):
        try:
            yield [name]
            yield [name + b"z"]
        finally:
            closed.append(name)

    merged = runs.merge([stream(b"a"), stream(b"b")])
    next(merged)
    merged.close()
    assert sorted(closed) == [b"a", b"b"]


@pytest.fixture
def sorted_lines():
    rng = random.Random(5)
    return sorted(b"%c%d %d" % (rng.choice(b"abc"), rng.randrange(5000), rng.randrange(10))
                  for _ in range(3000))


@pytest.mark.parametrize("chunk_size", [1, 255, 256, 257, 5000])
def test_run_position_and_chunks_from_there(tmp_path, sorted_lines, chunk_size):
    run = runs.write_run([sorted_lines[i:i + chunk_size]
                          for i in range(0, len(sorted_lines), chunk_size)], str(tmp_path / "r.run"))
    assert (run.lines, run.size) == (len(sorted_lines), sum(len(line) + 1 for line in sorted_lines))
    assert (tmp_path / "r.run").read_bytes() == b"".join(line + b"\n" for line in sorted_lines)
    keys = [b"", b"a", b"a2", b"b", b"b4999 9", b"b4999 9\x00", b"c", b"zz", None] + sorted_lines[::97]
    for key in keys:
        n, offset = run.position(key)
        expected = 0 if key is None else bisect.bisect_left(sorted_lines, key)
        assert n == expected, key
        assert offset == sum(len(line) + 1 for line in sorted_lines[:n])
        rest = [line for chunk in run.chunks(offset, 100) for line in chunk]
        assert rest == sorted_lines[n:]


def test_empty_run(tmp_path):
    run = runs.write_run([], str(tmp_path / "e.run"))
    assert run.position(b"x") == (0, 0) and list(run.chunks()) == []


def test_spill_and_merge_runs_in_rounds_within_the_fan_in(tmp_path, monkeypatch):
    rng = random.Random(9)
    lines = [b"%05d" % rng.randrange(10000) for _ in range(2000)]
    spilled = runs.spill(chunked(lines, rng), str(tmp_path), memory=600)
    assert len(spilled) == 20 and all(run.size <= 600 + 6 * 10 for run in spilled)
    open_now, most = [0], [0]
    chunks = runs.Run.chunks

    def counted(self, *args):
        open_now[0] += 1
        most[0] = max(most[0], open_now[0])
        try:
            yield from chunks(self, *args)
        finally:
            open_now[0] -= 1

    monkeypatch.setattr(runs.Run, "chunks", counted)
    left = runs.merge_runs(spilled, str(tmp_path), fan_in=3, memory=1 << 16)
    assert len(left) == 3 and most[0] == 3
    merged = [line for chunk in runs.merge([run.chunks() for run in left]) for line in chunk]
    assert merged == sorted(lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        name for run in left for name in (run.path.rsplit("/", 1)[1], run.path.rsplit("/", 1)[1] + ".idx"))
    assert runs.merge_runs(left, str(tmp_path), fan_in=3, memory=1 << 16, limit=1)[0].lines == 2000
    with pytest.raises(ValueError):
        runs.merge_runs(left, str(tmp_path), fan_in=1, memory=1)
