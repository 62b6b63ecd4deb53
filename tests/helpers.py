"""Reference readers the tests compare against: pywb's indexer and ZipNum reader."""
import gzip
import io
import json
import os
import re
import tempfile

from pywb.indexer.cdxindexer import write_cdx_index
from pywb.warcserver.index.zipnum import ZipNumIndexSource

from webarchive_indexing.cdx.cdxline import format_line
from webarchive_indexing.cdx.indexer import IndexResult, iter_fields

DATA = os.path.join(os.path.dirname(__file__), "data")
REAL = os.path.join(DATA, "real")
OFFSET = re.compile(r'"offset": "(\d+)"')
RESUMED = re.compile(r"reading goes on at .*at offset (\d+)$")


def pywb_cdx(path, fmt="cdxj", filename=None):
    """What pywb 2.10's ``cdx-indexer -s [-j]`` writes for one file (as text).

    What was indexed before a record it cannot read is kept, as its command line keeps it
    where it fails with ArchiveLoadFailed, and also where it fails otherwise (an
    AttributeError, OverflowError, zlib.error... on damaged input).
    """
    out = io.BytesIO()
    with open(path, "rb") as fh:
        try:
            write_cdx_index(out, fh, filename or os.path.basename(path), sort=True,
                            cdxj=fmt == "cdxj", cdx09=fmt == "cdx9")
        except Exception:  # noqa: BLE001 (pywb fails in many ways on damaged input)
            pass
    return out.getvalue().decode("utf-8")


def index_in_python(path, name):
    """``index_file``'s result with no line made by the compiled walker (``_members.c``'s
    ``make_line``): every record's fields made in Python (``record_fields``), then its line."""
    result = IndexResult(path, name)
    with open(path, "rb") as fh:
        result.lines = sorted(format_line(fields)
                              for fields in iter_fields(fh, path, name, result))
    return result


def pywb_cdx_from(path, start, filename=None):
    """The CDXJ lines pywb writes reading ``path`` from byte ``start`` on, with offsets in the
    whole file: what it reads of the records after that point."""
    with open(path, "rb") as fh:
        fh.seek(start)
        rest = fh.read()
    with tempfile.NamedTemporaryFile(suffix=os.path.splitext(path)[1]) as tail:
        tail.write(rest)
        tail.flush()
        text = pywb_cdx(tail.name, filename=filename or os.path.basename(path))
    return [OFFSET.sub(lambda m: f'"offset": "{int(m[1]) + start}"', line)
            for line in text.splitlines(True)]


def line_offset(line):
    """The offset field of a CDXJ line."""
    return int(OFFSET.search(line)[1])


def resumed_at(errors):
    """The offsets at which our walk went on after the problems it reported."""
    return [int(m[1]) for e in errors for m in [RESUMED.search(str(e))] if m]


def pywb_lookup(idx_path, url, match_type=None, max_blocks=3, page_size=None):
    """All lines pywb's ZipNumIndexSource returns, walking every page.

    Without ``page=`` pywb returns only page 0. ``showNumPages`` yields one dict whose
    ``pages`` may be 0 (then asking for page 0 raises). ``load_index`` rewrites its
    params (CDXQuery adds key/end_key/matchType), hence a fresh dict per call.
    """
    source = ZipNumIndexSource(str(idx_path), {"max_blocks": max_blocks})

    def params(**extra):
        p = {"url": url, **extra}
        if match_type:
            p["matchType"] = match_type
        if page_size:
            p["pageSize"] = str(page_size)
        return p

    info = next(iter(source.load_index(params(showNumPages="true"))))
    return [cdx.to_text().encode() for page in range(info["pages"])
            for cdx in source.load_index(params(page=str(page)))]


def gunzip_text(path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read()


def pywb_params(url, match_type=None, **extra):
    """CDX server parameters as pywb takes them (a wildcard pattern carries no matchType)."""
    params = {"url": url, **{k: v for k, v in extra.items() if v is not None}}
    if match_type:
        params["matchType"] = match_type
    return params


def pywb_page_info(idx_path, url, match_type, page_size, max_blocks=10):
    """pywb's ``showNumPages`` answer for the cluster of ``idx_path``."""
    source = ZipNumIndexSource(str(idx_path), {"max_blocks": max_blocks})
    params = pywb_params(url, match_type, pageSize=str(page_size), showNumPages="true")
    return dict(next(iter(source.load_index(params))))


def pywb_page(idx_path, url, match_type, page_size, page, max_blocks=10):
    """The lines of pywb's ``page=`` for the cluster of ``idx_path`` (CDXException for a
    page that is not there)."""
    source = ZipNumIndexSource(str(idx_path), {"max_blocks": max_blocks})
    params = pywb_params(url, match_type, pageSize=str(page_size), page=str(page))
    return [cdx.to_text().encode() for cdx in source.load_index(params)]


def fields_but_place(lines):
    """CDXJ lines without what differs between two copies of the same records (offset,
    length, filename): sorted (key, timestamp, the other fields) of each."""
    out = []
    for line in lines:
        key, timestamp, data = line.split(" ", 2)
        data = {k: v for k, v in json.loads(data).items() if k not in ("offset", "length", "filename")}
        out.append((key, timestamp, json.dumps(data, sort_keys=True)))
    return sorted(out)


def warcs(directory, files, captures, seed):
    """Generated WARC files in ``directory``, without the ground-truth manifests beside them
    (a build of the directory would take those for manifests of archives)."""
    from webarchive_indexing.commands.corpus import make_corpus
    paths = make_corpus(str(directory), files=files, captures=captures, seed=seed)
    for name in os.listdir(directory):
        if name.endswith(".jsonl"):
            os.remove(os.path.join(directory, name))
    return paths


def uncompressed(path):
    """A WARC file's uncompressed bytes (of a .warc, .warc.gz, or .warc.zst without a
    dictionary), as the gzip and zstd tools give them."""
    import zstandard
    data = open(path, "rb").read()
    if data[:4] == b"\x28\xb5\x2f\xfd":
        return zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
