"""One owner each (issue 22, item 2): one reader of CDX files as the jobs read them, which
every engine uses (Spark's streamed, in bounded memory); one resume loop of a broken
stream for S3 and HTTP; names from data placed by ``storage.below``; the inputs modules
each of a readable size."""
import errno
import gzip
import io
import itertools
import os
import tracemalloc
from pathlib import Path

import pytest
from mrjob.protocol import RawValueProtocol
from mrjob.util import to_lines

from webarchive_indexing import storage
from webarchive_indexing.build import indexprep, merge
from webarchive_indexing.cdx import cdxfile
from webarchive_indexing.cdx.cdxfile import IndexInputError
from webarchive_indexing.cdx.cdxline import is_cdx_line
from webarchive_indexing.copy.fetch import Failed, source_path
from webarchive_indexing.engines import spark_engine
from webarchive_indexing.inputs.discovery import Index
from webarchive_indexing.storage import common, s3 as s3_storage, web as web_storage

PACKAGE = Path(__file__).resolve().parent.parent / "webarchive_indexing"

LINES = b"".join([
    b"\xef\xbb\xbfcom,example)/bom 20240101000000 {\"a\": 1}\n",  # the jobs keep it, BOM and all
    b" CDX N b a m s k r M S V g\n",
    b"\n",
    b"com,example)/a 20240101000000 {\"offset\": \"1\"}\r\n",
    b"com,example)/caf\xe9 20240101000000 latin-1\n",
    b"com,example)/b\r 20240101000000 a CR in the key\n",
    b"com,example)/z 20240101000000 no newline at the end",
])


def mrjob_view(data):
    """The lines (str) a job's mapper gets from a CDX file's inflated bytes: mrjob's own
    line splitting and protocol, then the jobs' filter."""
    lines = []
    for raw in to_lines(iter([data])):
        _, text = RawValueProtocol().read(raw.rstrip(b"\r\n"))
        if is_cdx_line(text):
            lines.append(text)
    return lines


def local_view(path, size=cdxfile.CHUNK_BYTES):
    return [line.decode() for chunk in merge._read(path, size) for line in chunk]


@pytest.mark.parametrize("name,body", [
    ("plain.cdx", LINES),
    ("one.cdx.gz", gzip.compress(LINES)),
    ("members.cdx.gz", gzip.compress(LINES[:60]) + gzip.compress(LINES[60:])),
    ("gzipped-but-named.cdx", gzip.compress(LINES)),  # read by its first bytes, as locally
])
def test_every_engine_reads_a_cdx_file_as_the_jobs_do(tmp_path, name, body):
    path = str(tmp_path / name)
    Path(path).write_bytes(body)
    expected = mrjob_view(LINES)
    assert len(expected) == 4 and expected[0].startswith("\ufeff")
    assert list(spark_engine.read_cdx_lines(path)) == expected
    assert local_view(path) == expected == local_view(path, 7)


def test_a_cut_cdx_file_is_named_with_its_byte_by_every_engine(tmp_path):
    path = str(tmp_path / "cut.cdx.gz")
    whole = gzip.compress(LINES * 2000)
    Path(path).write_bytes(whole[:len(whole) // 2])
    lines = []
    with pytest.raises(IndexInputError, match=r"cut.cdx.gz: the gzip member at byte 0 is cut short"):
        for line in spark_engine.read_cdx_lines(path):
            lines.append(line)
    assert lines and lines == mrjob_view(LINES * 2000)[:len(lines)]  # the lines before it
    with pytest.raises(merge.InputFailed) as failed:
        local_view(path)
    assert failed.value.path == path and failed.value.reason == "the gzip member at byte 0 is cut short"


class Rdd:
    """What ``cdx_lines_rdd`` asks of Spark: a partition per group, its lines lazily."""

    def __init__(self, items):
        self.items = items

    def flatMap(self, function):
        return Rdd(itertools.chain.from_iterable(map(function, self.items)))


class Context:
    def parallelize(self, items, slices):
        return Rdd(items)


def test_spark_streams_a_large_cdx_file(tmp_path):
    """Spark's tasks read a CDX file a chunk at a time: reading one of 40 MB holds a few
    MB at most (the whole file, inflated, held 40 MB and its lines as much again)."""
    line = b'com,example)/%07d 20240101000000 {"url": "http://example.com/", "offset": "1", ' \
           b'"length": "2", "filename": "crawl/a.warc.gz"}\n'
    count = 350_000
    path = tmp_path / "big.cdx.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        for start in range(0, count, 50_000):
            out.write(b"".join(line % i for i in range(start, start + 50_000)))
    inflated = count * (len(line) + 1)
    assert inflated > 40 << 20
    rdd = spark_engine.cdx_lines_rdd(Context(), [str(path)], sizes=[path.stat().st_size])
    tracemalloc.start()
    try:
        seen = last = 0
        for text in rdd.items:
            seen += 1
            last = text
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen == count and last == (line % (count - 1)).decode().rstrip("\n")
    assert peak < 12 << 20, f"{peak} bytes held reading {inflated} bytes"


# -- one resume loop -------------------------------------------------------------------------

class Broken(Exception):
    pass


class Flaky(common.ResumingStream):
    """A stream of ``data`` whose every answer breaks after ``every`` bytes, and whose
    answers from a place where it broke break at once, ``breaks`` times in all there."""

    def __init__(self, data, every, breaks):
        super().__init__("test://flaky")
        self.data, self.every, self.breaks = data, every, breaks
        self.left, self.raised, self.opened, self.closed_answers = every, {}, [0], 0

    def _read(self, buffer):
        if not self.left:
            self.raised[self.pos] = self.raised.get(self.pos, 0) + 1
            raise Broken(f"reset at {self.pos}")
        piece = self.data[self.pos:self.pos + min(len(buffer), self.left)]
        buffer[:len(piece)] = piece
        self.left -= len(piece)
        return len(piece)

    def _broken(self):
        return (Broken,)

    def _reopen(self):
        self.left = self.every if self.raised[self.pos] >= self.breaks else 0
        self.opened.append(self.pos)

    def _close_answer(self):
        self.closed_answers += 1


def test_one_loop_resumes_both_backends_streams():
    assert issubclass(s3_storage._S3Stream, common.ResumingStream)
    assert issubclass(web_storage._HTTPStream, common.ResumingStream)
    data = bytes(range(256)) * 4
    # broken RESUMES times in a row at each place: resumed each time, from where it broke
    stream = Flaky(data, 100, common.RESUMES)
    assert io.BufferedReader(stream, 64).read() == data
    assert stream.opened[:common.RESUMES + 2] == [0] + [100] * common.RESUMES + [200]
    assert stream.pos == len(data)
    # once more than RESUMES in a row: one line naming the URL, the byte, the last failure
    stream = Flaky(data, 100, common.RESUMES + 1)
    with pytest.raises(OSError) as failed:
        io.BufferedReader(stream, 64).read()
    assert failed.value.errno == errno.EIO and failed.value.filename == "test://flaky"
    assert failed.value.strerror == (f"broken at byte 100 after {common.RESUMES} resumes, the "
                                     "last time by Broken: reset at 100")
    stream.close()
    assert stream.closed_answers == common.RESUMES + 1


# -- names from data through storage.below -----------------------------------------------------

def test_a_cdx_filename_through_a_link_out_of_the_warc_prefix_is_not_read(tmp_path):
    (tmp_path / "warcs" / "crawl").mkdir(parents=True)
    (tmp_path / "secret").mkdir()
    os.symlink(tmp_path / "secret", tmp_path / "warcs" / "out")
    prefix = str(tmp_path / "warcs")
    assert source_path(prefix, "crawl/a.warc.gz") == f"{prefix}/crawl/a.warc.gz"
    for name in ("out/a.warc.gz", "crawl/./a.warc.gz", "crawl//a.warc.gz"):
        with pytest.raises(Failed, match=f"the CDX filename '{name}' is not a name below "
                                         f"--warc-prefix {prefix}: not read") as failed:
            source_path(prefix, name)
        assert failed.value.permanent


def test_a_rewritten_index_input_stays_in_its_directory(tmp_path):
    """The name of a rewrite is made of the input's (control characters, backslashes and
    all) and placed below OUTDIR/rewritten-indexes by ``storage.below``."""
    name = "a\\b\x01c.cdxj"
    (tmp_path / name).write_bytes(b"\xef\xbb\xbfcom,example)/ 20240101000000 "
                                  b"{\"offset\": \"1\", \"length\": \"2\"}\n")  # a BOM: rewritten
    sources, errors, _ = indexprep.open_sources([Index(str(tmp_path / name), name, "cdx")])
    assert not errors
    out = tmp_path / "out"
    files, errors, _, lines = indexprep.prepare(sources, str(out))
    assert files == [str(out / indexprep.INDEXES_DIR / "00000-a%5Cb%01c.cdx.gz")]
    assert not errors and lines == 1 and storage.inside(files[0], str(out / indexprep.INDEXES_DIR))


# -- the inputs layer in modules of a readable size ------------------------------------------

@pytest.mark.parametrize("module", sorted(p.name for p in (PACKAGE / "inputs").glob("*.py")))
def test_inputs_modules_are_of_a_readable_size(module):
    assert len((PACKAGE / "inputs" / module).read_text().splitlines()) <= 500
