"""A WACZ's own index taken instead of reading its WARC files (``--trust-wacz-index``),
only when the WACZ vouches for it.

Trusted when: its ``datapackage.json`` lists every entry of ``archive/`` and ``indexes/``
with a hash (``sha256:``, or py-wacz's ``md5:``) and size that the entry's bytes have;
``datapackage-digest.json``, where there is one, has the hash of ``datapackage.json`` (its
signature, if any, is not checked); it has an index of its own (``indexes/*.cdx``,
``.cdxj``, ``.cdx.gz``, ``.cdxj.gz``: one gzip stream or the gzip blocks of a compressed
index, ``cdxj-gzip-1.0``, read member after member, its ``index.idx`` not needed) of CDXJ
lines; and every line names a WARC entry that is read in place (``warc.wacz``). Anything
else is ``Untrusted``, saying why: the caller reads the WARC files instead.

Each line is made the line our own in-place indexing writes (``docs/wacz.md``): its
``filename`` the WACZ's, its ``offset`` into the WACZ, its ``entry`` the ZIP entry, its
keys in pywb's order (``--post-append``: with ``method`` and ``requestBody``; without it, a
POST or PUT capture keyed by its URL alone, as pywb keys it); a ``digest`` of
``sha1:BASE32`` (cdxj-indexer's, py-wacz's) is pywb's ``BASE32``. Keys pywb does not write
(cdxj-indexer's ``recordDigest``) are left out. Everything holds one piece at a time but
the lines, as indexing holds them.
"""
import hashlib
import json
import zipfile
import zlib

from .cdxfile import IndexInputError, Inflated, split_lines
from .cdxline import ALIASES, format_line, split_cdxj
from .urlkey import url_key
from ..warc import wacz

DATAPACKAGE = "datapackage.json"
DIGEST = "datapackage-digest.json"
INDEX_DIR = "indexes/"
INDEX_SUFFIXES = (".cdx", ".cdxj", ".cdx.gz", ".cdxj.gz")
HASHES = {"sha256": hashlib.sha256, "md5": hashlib.md5}
PIECE = 1 << 20


class Untrusted(Exception):
    """Why a WACZ's own index is not taken."""


def _hash_of(declared, where):
    kind, _, value = str(declared).partition(":")
    if kind not in HASHES or not value:
        raise Untrusted(f"{where} has a hash of a kind not checked here ({declared!r}; "
                        f"{', '.join(HASHES)})")
    return kind, value


def _check(zf, name, declared, size=None):
    kind, value = _hash_of(declared, name)
    digest, got = HASHES[kind](), 0
    with zf.open(name) as fh:
        while piece := fh.read(PIECE):
            digest.update(piece)
            got += len(piece)
    if digest.hexdigest() != value.lower() or (size is not None and size != got):
        raise Untrusted(f"{name} has not the {kind} hash (or size) its {DATAPACKAGE} says: "
                        "changed since it was packed")


def _json(zf, name):
    try:
        return json.loads(zf.read(name))
    except ValueError as exc:
        raise Untrusted(f"its {name} is no JSON ({exc})") from None


def check_package(zf):
    """``Untrusted`` unless every entry of ``archive/`` and ``indexes/`` of the ZIP ``zf``
    has the hash and size its ``datapackage.json`` lists (and that has the hash its
    ``datapackage-digest.json`` says, where there is one)."""
    names = set(zf.namelist())
    if DATAPACKAGE not in names:
        raise Untrusted(f"it has no {DATAPACKAGE} to check its index by")
    if DIGEST in names:
        digest = _json(zf, DIGEST)
        kind, value = _hash_of(digest.get("hash") if isinstance(digest, dict) else None, DIGEST)
        if HASHES[kind](zf.read(DATAPACKAGE)).hexdigest() != value.lower():
            raise Untrusted(f"its {DATAPACKAGE} has not the hash its {DIGEST} says")
    package = _json(zf, DATAPACKAGE)
    resources = package.get("resources") if isinstance(package, dict) else None
    if not isinstance(resources, list):
        raise Untrusted(f"its {DATAPACKAGE} lists no resources")
    listed = {}
    for resource in resources:
        if isinstance(resource, dict) and isinstance(resource.get("path"), str):
            listed[resource["path"]] = resource
    for name in sorted(names):
        if not name.startswith((wacz.ARCHIVE_DIR, INDEX_DIR)) or name.endswith("/"):
            continue
        if name not in listed:
            raise Untrusted(f"its entry {name} is not in its {DATAPACKAGE}")
        size = listed[name].get("bytes")
        _check(zf, name, listed[name].get("hash"), size if isinstance(size, int) else None)


def _index_lines(zf, name):
    """The lines of the index entry ``name``, a piece at a time (gzip member after member,
    as a compressed index's blocks are)."""
    with zf.open(name) as fh:
        yield from split_lines(Inflated(fh, name))


def _own_fields(key, timestamp, record, entry, filename, post_append):
    fields = {ALIASES.get(name, name): str(value) for name, value in record.items()}
    fields.update(urlkey=key, timestamp=timestamp, filename=filename, entry=entry.name,
                  offset=str(entry.start + int(fields["offset"])))
    if fields.get("digest", "").startswith("sha1:"):
        fields["digest"] = fields["digest"][5:]
    if not post_append and "method" in fields:
        fields["urlkey"] = url_key(fields["url"])
    return fields


def own_lines(fh, path, filename, fmt, keys, post_append):
    """The lines of the WACZ open as ``fh`` (at ``path``) made from its own index, as
    ``index_file`` writes them (``fmt``, ``keys``), sorted; ``Untrusted`` saying why they
    are not taken."""
    fh = wacz.seekable(fh, path)
    entries, problems = wacz.archive_entries(fh, path)
    if problems:
        raise Untrusted(f"not every WARC entry is read in place ({problems[0].reason})")
    entries = {entry.name: entry for entry in entries}
    try:
        lines = _lines(fh, entries, filename, fmt, keys, post_append)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        # what zipfile raises for an entry it cannot read (a CRC that is not its bytes'...)
        raise Untrusted(f"an entry of it cannot be read ({exc})") from None
    lines.sort()
    return lines


def _lines(fh, entries, filename, fmt, keys, post_append):
    with zipfile.ZipFile(fh) as zf:
        indexes = sorted(name for name in zf.namelist()
                         if name.startswith(INDEX_DIR) and name.endswith(INDEX_SUFFIXES))
        if not indexes:
            raise Untrusted(f"it has no index of its own ({INDEX_DIR}*"
                            f"{', *'.join(INDEX_SUFFIXES)})")
        check_package(zf)
        lines = []
        for name in indexes:
            try:
                for number, line in enumerate(_index_lines(zf, name), 1):
                    text = line.decode("utf-8").strip()
                    if not text:
                        continue
                    cdxj = split_cdxj(text)
                    if cdxj is None:
                        raise Untrusted(f"line {number} of its {name} is not a CDXJ line")
                    key, timestamp, record = cdxj
                    entry = entries.get(wacz.ARCHIVE_DIR + str(record.get("filename")))
                    if entry is None:
                        raise Untrusted(f"line {number} of its {name} names "
                                        f"{record.get('filename')!r}, no WARC entry of it")
                    if not str(record.get("offset", "")).isdigit() or "url" not in record:
                        raise Untrusted(f"line {number} of its {name} has no offset or URL")
                    lines.append(format_line(_own_fields(key, timestamp, record, entry,
                                                         filename, post_append), fmt, keys))
            except (ValueError, IndexInputError) as exc:
                raise Untrusted(f"its {name} cannot be read ({exc})") from None
    return lines
