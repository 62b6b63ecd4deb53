"""CDX index entries from WARC/ARC records, as pywb 2.10's ``cdx-indexer`` writes them.

Three small steps, each usable alone:

* ``record_fields(record)``: the fields of one record (``None`` for a record
  that is not indexed), following pywb's ``DefaultRecordParser`` rules;
* ``format_line(fields, fmt)``: one CDXJ or CDX11 line from those fields (``cdxline``);
* ``index_file(path, filename, fmt)``: the sorted lines of a whole file (a local
  path or an ``s3://`` URL), with the problems met on the way.

    >>> result = index_file("tests/data/real/example.warc.gz", "example.warc.gz")
    >>> result.lines[0][:40]
    'com,example)/ 20140127171200 {"url": "ht'

CDX formats are data, in ``cdxline``: a legend of field letters (as in the
``CDX N b a ...`` header line) or the CDXJ key order.
"""
import functools
import json
import re
from urllib.parse import urljoin

from .. import storage
from .cdxline import CDX_FIELDS, CDXJ_KEYS, FORMATS, POST_KEYS, format_line, name_problem
from .urlkey import origin_key, url_key
from ..warc.headers import hash_next, header_getter
from ..warc.magic import compression
from ..warc.walk import ArchiveError, Record, RecordError, Skipped, iter_records

# Metadata records whose payload a walk with Common Crawl's fields reads
METADATA_CONTENT_TYPE = "application/warc-fields"
# Bytes of such a record read at most (Common Crawl's are a few hundred)
METADATA_MAX = 1 << 16
# Characters java.net.URI refuses in a URL: a redirect target with one is left out, as
# Common Crawl's crawler leaves out a Location it cannot make a URI of
NOT_IN_URI = re.compile(r'[\x00-\x20"<>\\^`{|}\x7f]')

WARC_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z?$")
# pywb takes an ARC archive-date as it is (its first 14 characters): here, if it is digits
ARC_DATE = re.compile(r"\d+$")
# Not replayable captures, or records pywb's indexer never lists.
SKIPPED_WARC_TYPES = ("request", "warcinfo")
# Records of WARC fields (metadata of the crawl, not captures).
SKIPPED_CONTENT_TYPES = ("application/warc-fields",)
# Heritrix 1.x metadata records whose mime collides with responses.
SKIPPED_METADATA_MIMES = ("text/anvl",)
# With --post-append: the records pywb's indexer never lists nor pairs, and the requests
# whose method leaves their response's key as it is (passed over unparsed)
POST_SKIPPED_WARC_TYPES = ("warcinfo",)
PLAIN_METHODS = ("GET",)
POST_APPEND_CC = ("POST keys (--post-append) go with pywb's fields, not Common Crawl's "
                  "(--cdx-fields cc), whose index has none")


class FieldError(ValueError):
    """A record that cannot be indexed, for a reason other than the archive's structure."""


def wants_payload(record):
    """Whether the payload sha1 must be computed: pywb does so when no digest is given."""
    if record.rec_type in ("revisit", "request", "warcinfo"):
        return False
    if record.format == "arc":
        return True
    digest = record.rec_headers.get_header("WARC-Payload-Digest")
    return not digest or digest == "-"


def skipped_type(warc_type, content_type):
    """WARC records pywb's indexer never lists, judged by WARC-Type and Content-Type."""
    return warc_type in SKIPPED_WARC_TYPES or content_type in SKIPPED_CONTENT_TYPES


def _mime(content_type, default="unk"):
    """What precedes the first ';' or space of a Content-Type (pywb splits at either)."""
    return content_type.partition(";")[0].partition(" ")[0] if content_type else default


def _status(http_headers):
    code = http_headers.get_statuscode()
    if not code or (code == "204" and "Error" in http_headers.statusline):
        return "-"
    return code


@functools.lru_cache(maxsize=1 << 12)
def _day_digits(day):
    """YYYYMMDD of YYYY-MM-DD, the year without leading zeros as strftime writes it;
    ValueError if there is no such day."""
    import datetime  # (the compiled walker checks the common record's date itself)
    datetime.date(int(day[:4]), int(day[5:7]), int(day[8:10]))
    return day[:4].lstrip("0") + day[5:7] + day[8:10]


def warc_timestamp(date):
    """The 14-digit timestamp of a WARC-Date, as pywb makes it (warcio's
    ``iso_date_to_timestamp``: fractions of a second dropped); FieldError if it is no date."""
    if not WARC_DATE.match(date):
        return _other_warc_timestamp(date)
    hour, minute, second = date[11:13], date[14:16], date[17:19]
    try:
        if hour > "23" or minute > "59" or second > "59":
            raise ValueError("no such time of day")
        return _day_digits(date[:10]) + hour + minute + second
    except ValueError as exc:
        raise FieldError(f"bad WARC-Date {date!r}: {exc}") from None


def _other_warc_timestamp(date):
    """The timestamp of a WARC-Date in another form than YYYY-MM-DDThh:mm:ss[.f]Z that pywb
    takes (``2024-01-01``, ``2024-01-01T10:00Z``, 10 fraction digits): warcio's own
    ``iso_date_to_timestamp``, which pywb's indexer runs; FieldError where that fails."""
    from warcio.timeutils import iso_date_to_timestamp  # seldom needed
    try:
        return iso_date_to_timestamp(date)
    except (ValueError, TypeError, OverflowError):
        raise FieldError(f"bad WARC-Date {date!r}: expected YYYY-MM-DDThh:mm:ssZ") from None


def _redirect(url, status, http_headers):
    """The absolute target of a redirect (3xx but 304), as Common Crawl's index has it;
    None without a Location that makes a URL."""
    if len(status) != 3 or status[0] != "3" or status == "304":
        return None
    location = http_headers.get_header("Location")
    if not location:
        return None
    try:
        target = urljoin(url, location.strip())
    except ValueError:  # e.g. a bad IPv6 host
        return None
    return None if NOT_IN_URI.search(target) or ":" not in target else target


def cc_metadata(payload):
    """``{"charset": ..., "languages": ...}`` from the WARC fields of a Common Crawl metadata
    record (``charset-detected``, ``languages-cld2``), as their index carries them: the
    languages' ISO-639-3 codes in their order, a repeat left out, joined by commas."""
    found = {}
    for line in payload.decode("utf-8", "replace").splitlines():
        name, colon, value = line.partition(":")
        name, value = name.strip().lower(), value.strip()
        if not colon or not value:
            continue
        if name == "charset-detected":
            found["charset"] = value
        elif name == "languages-cld2":
            try:
                detected = json.loads(value).get("languages") or []
                codes = [item.get("code-iso-639-3") for item in detected]
            except (ValueError, AttributeError):
                continue
            kept = []
            for code in codes:
                if isinstance(code, str) and code and code != "null" and code not in kept[-2:]:
                    kept.append(code)
            if kept:
                found["languages"] = ",".join(kept)
    return found


# The WARC headers a record's fields are made of
_field_headers = header_getter(("WARC-Target-URI", "WARC-Date", "WARC-Json-Metadata",
                                "WARC-Identified-Payload-Type", "WARC-Payload-Digest"))


def _warc_fields(record):
    url, date, metadata, payload_type, digest = _field_headers(record.rec_headers)
    fields = {"url": url, "timestamp": warc_timestamp(date or ""), "metadata": metadata}
    if record.rec_type == "revisit":
        fields["mime"] = "warc/revisit"
    else:
        fields["mime"] = _mime(record.http_headers.get_header("Content-Type"))
        fields["mime-detected"] = payload_type
    fields["status"] = _status(record.http_headers) if record.rec_type == "response" else "-"
    digest = digest or "-"
    fields["digest"] = digest[5:] if digest.startswith("sha1:") else digest
    return fields


def _arc_fields(record):
    headers = record.rec_headers
    date = headers.get_header("archive-date") or ""
    if not ARC_DATE.match(date):
        raise FieldError(f"bad ARC archive-date {date!r}: expected 14 digits (YYYYMMDDhhmmss)")
    url = headers.get_header("uri")
    for char, escaped in (("\r", "%0D"), ("\n", "%0A"), ("\x0c", "%0C"), ("\x00", "%00")):
        url = url.replace(char, escaped)
    return {"url": url, "timestamp": date[:14],
            "mime": _mime(headers.get_header("content-type")),
            "status": _status(record.http_headers), "digest": "-"}


def record_fields(record, offset, length, payload_sha1=None):
    """The CDX fields of one warcio record, or None when pywb would not index it."""
    if record.http_headers.get_statuscode() == "-" or record.rec_type == "arc_header":
        return None
    if record.format == "arc":
        fields = _arc_fields(record)
    elif skipped_type(record.rec_type, record.content_type):
        return None
    else:
        fields = _warc_fields(record)
    if not fields["url"]:
        return None
    if record.rec_type == "metadata" and fields["mime"] in SKIPPED_METADATA_MIMES:
        return None
    try:
        fields["urlkey"] = url_key(fields["url"])
    except Exception as exc:  # surt raises assorted errors on malformed URLs
        raise FieldError(f"cannot canonicalize URL {fields['url']!r}: {exc}") from None
    if payload_sha1 is not None and fields["digest"] == "-":
        import base64  # (the compiled walker writes the common record's digest itself)
        fields["digest"] = base64.b32encode(payload_sha1).decode("ascii")
    fields["length"], fields["offset"] = str(length), str(offset)
    return fields


class IndexResult:
    """What indexing one file gave: its sorted ``lines`` (each ending in "\\n"), the
    ``records`` read (indexed or not), ``errors`` (``ArchiveError``/``RecordError``) and
    ``warnings`` ((offset, message))."""

    def __init__(self, path, filename):
        self.path, self.filename = path, filename
        self.lines, self.records, self.errors, self.warnings = [], 0, [], []

    @property
    def fatal(self):
        return any(type(e) is ArchiveError for e in self.errors)

    def warning_dicts(self):
        """The warnings as errors.json lists them."""
        return [{"file": self.path, "offset": o, "message": m} for o, m in self.warnings]


class _MetadataReader:
    """The ``wants_payload`` of a walk with Common Crawl's fields: the walker asks it about
    each record before it reads the record's payload, and so it reads, as they pass, the
    payload of WARC-fields metadata records (``last``: the record ID they refer to and
    what ``cc_metadata`` found)."""

    def __init__(self):
        self.last = None

    def __call__(self, record):
        if record.rec_type == "metadata" and _mime(record.content_type, "") == METADATA_CONTENT_TYPE:
            self.last = (record.rec_headers.get_header("WARC-Concurrent-To"),
                         cc_metadata(record.raw_stream.read(METADATA_MAX)))
            return False
        return wants_payload(record)


class _RequestReader:
    """The ``wants_payload`` of a walk with ``--post-append``: it reads, as they pass, the
    body of each request record the walker hands over (``last``: its method and query)."""

    def __init__(self, wants):
        self.wants, self.last = wants, None

    def __call__(self, record):
        if record.rec_type == "request":
            from .postquery import method_query  # (--post-append only)
            http = record.http_headers
            self.last = method_query(http.protocol, http.get_header("Content-Type"),
                                     http.get_header("Content-Length"), record.raw_stream)
            return False
        return self.wants(record)


def _pywb_entry(record):
    """Whether pywb's indexer with ``append_post`` makes an entry of a record, one that a
    request and its response must be next to each other among to pair."""
    if record.rec_type == "arc_header" or record.http_headers.get_statuscode() == "-":
        return False
    return record.format != "warc" or record.content_type not in SKIPPED_CONTENT_TYPES


def _paired(first, second):
    """Whether two entries in a row are a request and its capture, as pywb pairs them:
    one URL, the second concurrent to the first, one a request and the other not."""
    one, two = first.rec_headers, second.rec_headers
    return ((first.rec_type == "request") != (second.rec_type == "request")
            and one.get_header("WARC-Target-URI") == two.get_header("WARC-Target-URI")
            and two.get_header("WARC-Concurrent-To") == one.get_header("WARC-Record-ID"))


def _post_key(fields, method, query):
    """Give a capture the key, ``method`` and ``requestBody`` of the request it answered,
    as pywb's indexer gives them (nothing for GET); a message if its URL with the query
    makes no key (the capture keeps its own)."""
    from .postquery import append_query  # (--post-append only)
    new_url = append_query(fields["url"], method, query).replace("WB_wombat_", "")
    if new_url == fields["url"]:
        return None
    try:
        fields["urlkey"] = url_key(new_url)
    except Exception as exc:  # surt raises assorted errors on malformed URLs
        return f"capture left under its URL's key: cannot canonicalize {new_url!r}: {exc}"
    fields["method"], fields["requestBody"] = method, query
    return None


def _cc_fields(record, fields):
    """Add what Common Crawl's index lines carry beyond pywb's: truncation and redirect."""
    if record.format == "arc":
        return
    fields["truncated"] = record.rec_headers.get_header("WARC-Truncated")
    if record.rec_type == "response":
        fields["redirect"] = _redirect(fields["url"], fields["status"], record.http_headers)


def iter_fields(fh, path, filename, result, cdx_fields="pywb", zstd_dictionary=None,
                post_append=False, zstd_verify=False, lines=None):
    """Yield the fields of every indexable record; problems are appended to ``result``.
    ``zstd_dictionary``: a dictionary file for a .warc.zst without its own; ``zstd_verify``:
    every frame of it decompressed and checked (``iter_records``). ``lines``: a list to
    which, with pywb's fields, the compiled walker adds the whole CDXJ line of each common
    record it can make one of (``iter_records``' ``cdxj``) instead of its fields yielded.

    With Common Crawl's fields (``cdx_fields="cc"``) a response's fields wait for the
    metadata record after it, whose charset and languages they take. With ``post_append``
    each capture waits for the record after it, which may be its request (``_paired``)."""
    if post_append:
        yield from _post_append_fields(fh, path, filename, result, zstd_dictionary,
                                       zstd_verify)
        return
    cc = cdx_fields == "cc"
    metadata = _MetadataReader() if cc else None
    pending = pending_id = None
    skip = (SKIPPED_WARC_TYPES, () if cc else SKIPPED_CONTENT_TYPES)
    cdxj = None
    if lines is not None and not cc and filename not in ("", "-"):
        cdxj = (url_key, origin_key, hash_next, f'"filename": {json.dumps(filename)}', lines)
    try:
        for item in iter_records(fh, path, metadata or wants_payload, skip, zstd_dictionary,
                                 zstd_verify=zstd_verify, cdxj=cdxj):
            if type(item) is Skipped:
                result.records += item.count
                continue
            fields = _fields(item, path, result)
            if fields is False:
                continue
            if fields is not None:
                fields["filename"] = filename
            if cc:
                if metadata.last is not None:
                    refers_to, found = metadata.last
                    metadata.last = None
                    if pending is not None and refers_to == pending_id:
                        pending.update(found)
                if pending is not None and (fields is not None or item.record.rec_type == "metadata"):
                    yield pending
                    pending = None
                if fields is not None:
                    _cc_fields(item.record, fields)
                    if item.record.rec_type == "response":
                        pending = fields
                        pending_id = item.record.rec_headers.get_header("WARC-Record-ID")
                        continue
            if fields is not None:
                yield fields
    except ArchiveError as exc:
        result.errors.append(exc)
    if pending is not None:
        yield pending


def _fields(item, path, result):
    """The fields of a walk's item (None for a record not indexed), counted; False for a
    problem, appended to ``result``."""
    if isinstance(item, RecordError):
        result.errors.append(item)
        return False
    result.records += 1
    if item.notes:
        result.warnings.extend((item.offset, message) for message in item.notes)
    try:
        fields = record_fields(item.record, item.offset, item.length, item.payload_sha1)
    except FieldError as exc:
        result.errors.append(RecordError(path, item.offset, str(exc)))
        return False
    if fields is not None and type(item) is not Record:  # a WACZ's (wacz.EntryRecord)
        fields["entry"] = item.entry
    return fields


def _post_append_fields(fh, path, filename, result, zstd_dictionary, zstd_verify):
    """``iter_fields`` with ``post_append``: request records read too (their bodies by
    ``_RequestReader``; those of GET passed over unparsed), each capture given the key of
    the request next to it, as pywb's indexer pairs them (``_paired``, ``_post_key``)."""
    requests = _RequestReader(wants_payload)
    held = None  # the entry before: (record, its fields, its request's method and query)
    try:
        for item in iter_records(fh, path, requests, (POST_SKIPPED_WARC_TYPES, SKIPPED_CONTENT_TYPES),
                                 zstd_dictionary, PLAIN_METHODS, zstd_verify):
            if type(item) is Skipped:
                result.records += item.count
                if not item.request:
                    continue
                fields = record = None  # a GET request: no capture's key changes
            else:
                fields = _fields(item, path, result)
                record = None if fields is False else item.record
                if record is not None and not _pywb_entry(record):
                    continue  # (never indexed: not between a request and its capture)
            request = None
            if record is not None and record.rec_type == "request":
                request, requests.last = requests.last, None
            if held is not None and record is not None and _paired(held[0], record):
                capture, answered = (fields, held[2]) if request is None else (held[1], request)
                if capture is not None and answered is not None:
                    problem = _post_key(capture, *answered)
                    if problem:
                        result.warnings.append((item.offset, problem))
                found, held = (held[1], fields), None
            else:
                found, held = (held[1] if held else None,), (None if record is None else
                                                             (record, fields, request))
            for fields in found:
                if fields is not None:
                    fields["filename"] = filename
                    yield fields
    except ArchiveError as exc:
        result.errors.append(exc)
    if held is not None and held[1] is not None:
        held[1]["filename"] = filename
        yield held[1]


def _trusted(fh, path, result, fmt, keys, cdx_fields, post_append):
    """Whether the lines of the WACZ ``fh`` are those of its own index (then in ``result``);
    not for another file. Why not, of a WACZ, is a warning (of one that cannot be read, the
    walk's error), and ``fh`` is back at its start."""
    if compression(fh.peek(4)[:4]) != "zip":
        return False
    from . import waczown
    try:
        if cdx_fields != "pywb":
            raise waczown.Untrusted("its index has pywb's fields, not Common Crawl's")
        result.lines = waczown.own_lines(fh, path, result.filename, fmt,
                                         keys, post_append)
    except waczown.Untrusted as exc:
        result.warnings.append((0, f"its own index is not taken (--trust-wacz-index): {exc}; "
                                   "its WARC files are read instead"))
    except ArchiveError:
        pass  # no WACZ that can be read: the walk says why
    else:
        result.records = len(result.lines)
        return True
    if fh.seekable():
        fh.seek(0)
    return False


def index_file(path, filename=None, fmt="cdxj", opener=storage.open_read, cdx_fields="pywb",
               zstd_dictionary=None, post_append=False, trust_wacz_index=False,
               zstd_verify=False):
    """Index one WARC/ARC file: an ``IndexResult`` whose lines are sorted as pywb sorts them.

    Indexing goes on past a bad record, at the next gzip member, zstd frame or record
    found (see ``records``); records read before a problem that ends it are kept.
    ``cdx_fields="cc"`` adds Common Crawl's fields to CDXJ lines (``cdxline.CDX_FIELDS``).
    ``zstd_dictionary``: a dictionary file for a .warc.zst without a dictionary frame;
    ``zstd_verify``: each of its frames decompressed and checked, payloads too.
    ``post_append``: a POST or PUT capture keyed with its request's method and body, as
    pywb's ``cdx-indexer -p`` keys it (``postquery``). ``trust_wacz_index``: of a WACZ, the
    lines of its own index where its hashes check out (``waczown``); else a warning says
    why not, and its WARC files are read.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown CDX format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if cdx_fields not in CDX_FIELDS:
        raise ValueError(f"unknown CDX fields {cdx_fields!r}: choose one of {', '.join(CDX_FIELDS)}")
    if cdx_fields != "pywb" and fmt != "cdxj":
        raise ValueError("Common Crawl's fields (charset, languages, truncated, redirect) need "
                         "the CDXJ format: CDX11 and CDX9 have no columns for them")
    if post_append and cdx_fields != "pywb":
        raise ValueError(POST_APPEND_CC)
    keys = POST_KEYS if post_append else CDX_FIELDS[cdx_fields]
    result = IndexResult(path, filename or path.rsplit("/", 1)[-1])
    unwritable = name_problem(result.filename, fmt)
    if unwritable:
        result.errors.append(ArchiveError(path, 0, unwritable))
        return result
    try:
        fh = opener(path)
    except OSError as exc:
        result.errors.append(ArchiveError(path, 0, f"cannot open: {exc.strerror or exc}"))
        return result
    with fh:
        if trust_wacz_index and _trusted(fh, path, result, fmt, keys, cdx_fields, post_append):
            return result
        # (CDXJ lines of pywb's fields: most made whole by the compiled walker, in ``made``)
        made = [] if fmt == "cdxj" and keys is CDXJ_KEYS else None
        lines = [format_line(f, fmt, keys)
                 for f in iter_fields(fh, path, result.filename, result, cdx_fields,
                                      zstd_dictionary, post_append, zstd_verify, made)]
    if made:
        lines += made
    lines.sort()
    result.lines = lines
    return result
