"""Deterministic, Common-Crawl-shaped WARC/ARC test corpora with a ground-truth manifest.

The corpus is built to trip up an indexer: everything it must recover is written down
in a manifest beside each file, so tests and benchmarks can compare against facts
instead of against another indexer.

Record mix of a WARC file (each record its own gzip member, as Common Crawl writes):

* one ``warcinfo`` record, then per capture ``request`` + ``response`` (or ``revisit``)
  + ``metadata``; about 1.5% of captures are preceded by a ``resource`` record
  (``dns:HOST`` as ``text/dns``, or ``.../robots.txt`` as ``text/plain``);
* statuses 200, 301/302 (absolute or relative ``Location``), 403, 404, 500, 503;
* HTML plus text, JSON, CSS, JavaScript, XML sitemaps, PDF and images;
* about 5% of captures re-fetch an earlier 200 with an identical payload: a ``revisit``
  with ``WARC-Refers-To*`` headers;
* about 5% of responses have no ``WARC-Payload-Digest`` (indexers must hash the payload),
  about 2% no HTTP ``Content-Type``; Content-Types carry parameters and odd case
  (``text/html; charset=UTF-8``, ``Text/HTML``), some HTTP headers are all lower case,
  about 10% of responses carry ``WARC-Identified-Payload-Type``;
* about 15% of captures have a ``WARC-Date`` with microseconds (written as WARC/1.1);
* URLs over ``hosts`` sites: many TLDs, ``www.``/``WWW.``/other subdomains, mixed-case
  and ``xn--`` hosts, IP-address hosts, explicit default and non-default ports, upper
  case and percent-escapes in paths, query strings with unsorted arguments.

An ARC file (``fmt="arc"``) holds a version-1 ``filedesc://`` record and then one
record per capture: the same captures as the WARC for the same arguments, revisits
written out in full (ARC has no revisit) and resource records left out.

``NAME.manifest.jsonl`` has one JSON object per record, in file order, with the keys
``warc_type url timestamp status mime digest has_payload_digest offset length
filename``.  ``mime`` is the HTTP Content-Type exactly as written ("-" if none; for
resource records the WARC Content-Type, for ``filedesc`` the ARC one); ``digest`` is
the base32 sha1 of the HTTP entity body (for records without HTTP, of the whole block;
for a revisit, of the payload it repeats); ``offset``/``length`` delimit the gzip
member, or the raw record with its trailing blank lines when not gzipped.  An ARC
header line can only carry a bare MIME type, so there the line holds the Content-Type
cut at ``;`` (``no-type`` when absent, as Heritrix writes) while ``mime`` keeps the
header.

The made-up web and its crawl are in ``corpus_crawl``; this module writes the captures as
records, and the manifests. Output depends only on the arguments: the same arguments give byte-identical files
(given the same Python ``random`` and zlib, whose output the gzip members depend on).

Usage::

    from webarchive_indexing.commands.corpus import make_corpus, read_manifest

    for path in make_corpus("/tmp/corpus", files=2, captures=200, seed=7):
        for rec in read_manifest(path):
            print(rec["offset"], rec["length"], rec["warc_type"], rec["url"])

    $ python -m webarchive_indexing.commands.corpus --out /tmp/corpus --files 4 --captures 5000
"""

import argparse
import base64
import functools
import hashlib
import json
import os
import random
import sys
import uuid
import zlib
from datetime import datetime, timedelta, timezone

from .. import options
from .corpus_crawl import World, crawl, sha1_b32, timestamp, warc_date

__all__ = ["make_corpus", "read_manifest", "main"]

# Level 1 compresses this text three times faster than gzip's default 6, for members ~15%
# larger; readers decompress both at the same speed, so benchmark corpora build quicker.
_GZIP_LEVEL = 1

_START = datetime(2024, 3, 1, tzinfo=timezone.utc)
_SHA1_EMPTY = base64.b32encode(hashlib.sha1(b"").digest()).decode("ascii")
_USER_AGENT = "CCBot/2.0 (https://commoncrawl.org/faq/)"


# --- serialisation ----------------------------------------------------------------------

def _record_id(seed, file_no, cap_no, role):
    # derived, not drawn from the RNG: the captures must not depend on the output format
    digest = hashlib.sha1(f"{seed}/{file_no}/{cap_no}/{role}".encode()).digest()
    return f"<urn:uuid:{uuid.UUID(bytes=digest[:16], version=4)}>"


def _facts(warc_type, url, ts, status, mime, digest, has_payload_digest):
    return {"warc_type": warc_type, "url": url, "timestamp": ts, "status": status, "mime": mime,
            "digest": digest, "has_payload_digest": has_payload_digest}


def _warc_record(version, fields, block):
    # Content-Length goes after WARC-Record-ID, where Common Crawl puts it
    fields = fields[:3] + [("Content-Length", str(len(block)))] + fields[3:]
    head = version + "\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fields) + "\r\n"
    return head.encode() + block + b"\r\n\r\n"


def _warcinfo(name, seed, when, record_id):
    block = (f"isPartOf: CORPUS-{seed:03d}\r\npublisher: webarchive_indexing test corpus\r\n"
             "software: webarchive_indexing.corpus\r\nformat: WARC File Format 1.0\r\n"
             "conformsTo: http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf\r\n").encode()
    fields = [("WARC-Type", "warcinfo"), ("WARC-Date", warc_date(when, False)),
              ("WARC-Record-ID", record_id), ("Content-Type", "application/warc-fields"),
              ("WARC-Filename", name)]
    return (_warc_record("WARC/1.0", fields, block),
            _facts("warcinfo", "", timestamp(when), "-", "-", sha1_b32(block), False))


def _stamp(cap):
    """(version line, WARC-Date, 14-digit timestamp) shared by a capture's records."""
    # fractional seconds in WARC-Date are a WARC 1.1 addition
    version = "WARC/1.1" if cap.frac else "WARC/1.0"
    return version, warc_date(cap.when, cap.frac), timestamp(cap.when)


def _warc_resource(cap, rid, info_id):
    version, date, ts = _stamp(cap)
    url, ctype, block = cap.resource
    digest = sha1_b32(block)
    fields = [("WARC-Type", "resource"), ("WARC-Date", date), ("WARC-Record-ID", rid(cap.no, "resource")),
              ("Content-Type", ctype), ("WARC-Warcinfo-ID", info_id), ("WARC-Target-URI", url),
              ("WARC-Block-Digest", "sha1:" + digest)]
    return _warc_record(version, fields, block), _facts("resource", url, ts, "-", ctype, digest, False)


def _warc_request(cap, rid, info_id):
    version, date, ts = _stamp(cap)
    block = (f"GET {cap.target} HTTP/1.1\r\nUser-Agent: {_USER_AGENT}\r\n"
             "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
             f"Accept-Encoding: br,gzip\r\nHost: {cap.host_header}\r\nConnection: Keep-Alive\r\n\r\n").encode()
    fields = [("WARC-Type", "request"), ("WARC-Date", date), ("WARC-Record-ID", rid(cap.no, "request")),
              ("Content-Type", "application/http; msgtype=request"), ("WARC-Warcinfo-ID", info_id),
              ("WARC-IP-Address", cap.ip), ("WARC-Target-URI", cap.url),
              ("WARC-Block-Digest", "sha1:" + sha1_b32(block))]
    # a GET has no entity body, so its payload digest would be that of b""
    return _warc_record(version, fields, block), _facts("request", cap.url, ts, "-", "-", _SHA1_EMPTY, False)


def _warc_response(cap, rid, info_id):
    version, date, ts = _stamp(cap)
    kind = "response" if cap.original is None else "revisit"
    fields = [("WARC-Type", kind), ("WARC-Date", date), ("WARC-Record-ID", rid(cap.no, "response")),
              ("Content-Type", "application/http; msgtype=response"), ("WARC-Warcinfo-ID", info_id),
              ("WARC-Concurrent-To", rid(cap.no, "request")), ("WARC-IP-Address", cap.ip),
              ("WARC-Target-URI", cap.url)]
    if cap.payload_digest:
        fields.append(("WARC-Payload-Digest", "sha1:" + cap.digest))
    if cap.original is None:
        block = cap.head + cap.body
    else:  # identical-payload-digest revisit: the block is the HTTP headers only
        block = cap.head
        orig_no, orig_url, orig_date = cap.original
        profile = f"http://netpreserve.org/warc/{version[5:]}/revisit/identical-payload-digest"
        fields += [("WARC-Profile", profile), ("WARC-Refers-To", rid(orig_no, "response")),
                   ("WARC-Refers-To-Target-URI", orig_url), ("WARC-Refers-To-Date", orig_date)]
    fields.append(("WARC-Block-Digest", "sha1:" + sha1_b32(block)))
    if cap.identified:
        fields.append(("WARC-Identified-Payload-Type", cap.mime))
    return (_warc_record(version, fields, block),
            _facts(kind, cap.url, ts, str(cap.status), cap.ctype or "-", cap.digest, cap.payload_digest))


def _warc_metadata(cap, rid, info_id):
    version, date, ts = _stamp(cap)
    fields = [("WARC-Type", "metadata"), ("WARC-Date", date), ("WARC-Record-ID", rid(cap.no, "metadata")),
              ("Content-Type", "application/warc-fields"), ("WARC-Warcinfo-ID", info_id),
              ("WARC-Concurrent-To", rid(cap.no, "response")), ("WARC-Target-URI", cap.url)]
    return (_warc_record(version, fields, cap.meta),
            _facts("metadata", cap.url, ts, "-", "-", sha1_b32(cap.meta), False))


def _warc_capture(cap, rid, info_id):
    """(raw record, manifest facts) for each WARC record of one capture, in crawl order."""
    writers = (_warc_request, _warc_response, _warc_metadata)
    if cap.resource:
        writers = (_warc_resource,) + writers
    return [write(cap, rid, info_id) for write in writers]


def _arc_filedesc(name, when):
    block = b"1 0 webarchive_indexing\nURL IP-address Archive-date Content-type Archive-length\n"
    ts = timestamp(when)
    line = f"filedesc://{name} 0.0.0.0 {ts} text/plain {len(block)}\n"
    return (line.encode() + block + b"\n",
            _facts("filedesc", f"filedesc://{name}", ts, "-", "text/plain", sha1_b32(block), False))


def _arc_capture(cap):
    # ARC has no revisit: a repeated payload is written out again, as ARC-era crawlers did
    block = cap.head + cap.body
    # the header line is space-separated, so it can only hold the bare type
    arc_mime = cap.ctype.split(";")[0].strip() if cap.ctype else "no-type"
    ts = timestamp(cap.when)
    line = f"{cap.url} {cap.ip} {ts} {arc_mime} {len(block)}\n"
    return (line.encode() + block + b"\n",
            _facts("response", cap.url, ts, str(cap.status), cap.ctype or "-", cap.digest, False))


def _records(world, file_no, name, captures, fmt):
    # one random stream per file: file n is the same whatever the number of files
    rng = random.Random(f"{world.seed}/{file_no}")
    # files overlap in time, as the parallel fetchers of a crawl do
    start = _START + timedelta(minutes=7 * file_no)
    caps = crawl(world, rng, start, captures)
    if fmt == "arc":
        yield _arc_filedesc(name, start)
        yield from map(_arc_capture, caps)
        return
    rid = functools.partial(_record_id, world.seed, file_no)
    info_id = rid(-1, "warcinfo")
    yield _warcinfo(name, world.seed, start, info_id)
    for cap in caps:
        yield from _warc_capture(cap, rid, info_id)


def _gzip_member(data):
    compressor = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 31)  # wbits 31: gzip framing
    return compressor.compress(data) + compressor.flush()


def _write(path, records, gzip):
    name = os.path.basename(path)
    lines, offset = [], 0
    with open(path, "wb") as fh:
        for raw, facts in records:
            data = _gzip_member(raw) if gzip else raw
            fh.write(data)
            facts.update(offset=offset, length=len(data), filename=name)
            lines.append(json.dumps(facts, sort_keys=True) + "\n")
            offset += len(data)
    with open(path + ".manifest.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(lines)


# --- public API ---------------------------------------------------------------------------

def make_corpus(out_dir, files=2, captures=1000, seed=1, mean_kb=20.0, hosts=200, fmt="warc", gzip=True):
    """Write ``files`` WARC (or ARC) files of ``captures`` captures each into ``out_dir``.

    ``mean_kb`` is the mean size of HTML and binary payloads, ``hosts`` the number of
    sites URLs are drawn from.  Each file gets a ``.manifest.jsonl`` beside it (see the
    module docstring).  Returns the list of written WARC/ARC paths (sorted).
    """
    if fmt not in ("warc", "arc"):
        raise ValueError(f"fmt must be 'warc' or 'arc', not {fmt!r}")
    if files < 0 or captures < 0 or hosts < 1 or mean_kb <= 0:
        raise ValueError("need files >= 0, captures >= 0, hosts >= 1 and mean_kb > 0")
    os.makedirs(out_dir, exist_ok=True)
    world = World(seed, hosts, mean_kb)
    ext = f".{fmt}.gz" if gzip else f".{fmt}"
    paths = []
    for n in range(files):
        path = os.path.join(out_dir, f"CORPUS-{seed:03d}-{n:05d}{ext}")
        _write(path, _records(world, n, os.path.basename(path), captures, fmt), gzip)
        paths.append(path)
    return sorted(paths)


def read_manifest(path):
    """The manifest of the WARC/ARC at ``path``: one dict per record, in file order."""
    with open(path + ".manifest.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m webarchive_indexing.commands.corpus",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add(parser, *options.CORPUS)
    return write_corpus(parser.parse_args(argv))


def write_corpus(args):
    """``make_corpus`` with the options of ``options.CORPUS``; prints each path written."""
    for path in make_corpus(args.out, files=args.files, captures=args.captures, seed=args.seed,
                            mean_kb=args.mean_kb, hosts=args.hosts, fmt=args.format, gzip=args.gzip):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
