"""Reference readers the tests compare against: pywb's indexer and ZipNum reader."""
import gzip
import io
import os

from pywb.indexer.cdxindexer import write_cdx_index
from pywb.warcserver.index.zipnum import ZipNumIndexSource
from warcio.exceptions import ArchiveLoadFailed

DATA = os.path.join(os.path.dirname(__file__), "data")
REAL = os.path.join(DATA, "real")


def pywb_cdx(path, fmt="cdxj", filename=None):
    """What pywb 2.10's ``cdx-indexer -s [-j]`` writes for one file (as text).

    Like its command line, what was indexed before an unreadable record is kept.
    """
    out = io.BytesIO()
    with open(path, "rb") as fh:
        try:
            write_cdx_index(out, fh, filename or os.path.basename(path), sort=True,
                            cdxj=fmt == "cdxj", cdx09=fmt == "cdx9")
        except ArchiveLoadFailed:
            pass
    return out.getvalue().decode("utf-8")


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
