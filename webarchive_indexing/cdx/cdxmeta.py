"""What a per-archive CDX file was made from, and a sample of its lines, kept beside it.

``out/cdx/<name>.cdx.gz`` gets ``out/cdx/<name>.cdx.gz.meta.json``, one line of JSON::

    {"format": "cdxj", "source": {"size": 1234, "mtime_ns": 1700000000000000000},
     "lines": 5000, "sample_size": 200, "sample": [["0a1b...", "com,example)/ 2024..."], ...]}

* ``format`` and ``source`` (the archive's size and modification time, or on S3 its
  size and ETag; over HTTP its size only) decide whether ``--skip-existing`` may keep the CDX
  file: a CDX written in another format, or from an archive that has changed since
  (grown while it was being written, replaced), is indexed again (:func:`stale`).
* ``sample`` is the bottom-``sample_size`` of the file's CDX lines by
  ``splits.sample_key``, as the sample job's mapper would keep them; ``lines`` says how
  many there are. Merged over all archives (:func:`combine`), they give the sample
  job's split points without reading the CDX files again.

The meta file is written after the CDX file and removed before it is rewritten, so a
CDX file with a meta file always matches it; one without is indexed again. Its one
line never looks like a CDX line (``cdxline.is_cdx_line``), for jobs given a whole CDX
directory.
"""
import heapq
import json

from . import splits
from .. import storage
from .cdxline import is_cdx_line

SUFFIX = ".meta.json"


def meta_path(cdx_path):
    return cdx_path + SUFFIX


def source_of(archive):
    """What identifies this version of the archive (``storage.version``): its size, and
    its modification time or (on S3) its ETag."""
    return storage.version(storage.local_path(archive) or archive)


def sample_of(text, size):
    """``(lines, pairs)``: how many CDX lines the jobs read from a CDX file holding
    ``text``, and the bottom-``size`` ``(key, line)`` pairs of them."""
    reservoir = splits.Reservoir(size) if size else None
    count = 0
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if is_cdx_line(line):
            count += 1
            if reservoir:
                reservoir.add(line)
    return count, reservoir.items() if reservoir else []


def make(fmt, source, text, sample_size=0):
    """The meta of a CDX file of format ``fmt`` holding ``text``, made from ``source``."""
    lines, pairs = sample_of(text, sample_size)
    return {"format": fmt, "source": source, "lines": lines, "sample_size": sample_size,
            "sample": pairs}


def write(cdx_path, meta):
    storage.write_atomic(meta_path(cdx_path), json.dumps(meta).encode("utf-8"))


def read(cdx_path):
    """The meta of a CDX file; None if there is none or it cannot be read."""
    try:
        meta = json.loads(storage.read_bytes(meta_path(cdx_path)))
    except (FileNotFoundError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def stale(meta, fmt, source):
    """Why a CDX file with ``meta`` cannot stand for the archive ``source`` in format
    ``fmt`` (None if it can)."""
    if meta is None:
        return "no record of what it was made from"
    if meta.get("format") != fmt:
        return f"it is {meta.get('format')}, not {fmt}"
    if meta.get("source") != source:
        return "the archive changed since it was indexed"
    return None


def _usable(meta):
    return (meta is not None and meta.get("sample_size", 0) > 0
            and isinstance(meta.get("sample"), list) and isinstance(meta.get("lines"), int))


def combine(metas, size):
    """``(pairs, whole)``: the bottom-``size`` ``(key, line)`` pairs that the stored
    samples of ``metas`` prove, and the positions of the metas whose files must be
    sampled whole for the rest (their own pairs are not in ``pairs``).

    A stored sample holds every pair of its file up to its largest one. Merged, the
    samples give a ``size``-th smallest pair ``bound``, at least as large as the true
    one, so every pair of the result is at most ``bound``: a file whose sample holds
    all its lines, or ends above ``bound``, has given all it has to give. The others,
    and files without a sample, are left to be sampled whole. Memory: ``2 * size``
    pairs and one pair per file, whatever the number of files.
    """
    kept, ends, whole = [], [], []
    for number, meta in enumerate(metas):
        if not _usable(meta):
            whole.append(number)
            continue
        pairs = [tuple(pair) for pair in meta["sample"]]
        complete = meta["lines"] <= meta["sample_size"]
        ends.append((number, None if complete or not pairs else pairs[-1]))
        kept += [(pair, number) for pair in pairs]
        if len(kept) > 2 * size:
            kept = heapq.nsmallest(size, kept)
    kept = heapq.nsmallest(size, kept)
    bound = kept[-1][0] if len(kept) == size else None
    whole += [number for number, end in ends
              if end is not None and (bound is None or end <= bound)]
    skip = set(whole)
    return [pair for pair, number in kept if number not in skip], sorted(whole)
