"""Common Crawl's columnar index schema (cc-index-table, flat), and one CDX line -> one row.

The table has the columns of ``cc-index-schema-flat.json`` in commoncrawl/cc-index-table,
with the same names and types, so that the SQL Common Crawl documents runs unchanged;
``crawl`` and ``subset`` are partition columns (``crawl=.../subset=.../`` directories), as
in Common Crawl's own table. The values follow that project's rules (``CCIndex2Table``,
``WarcUri``, ``HostName``):

* ``url_host_*``: the host lower-cased, %-decoded and IDNA-encoded (punycode), without a
  trailing dot, split at dots from the right; none for an IP address, whose
  ``url_host_name`` is the address (a decimal IPv4 form such as ``1234`` made canonical);
* registry (ICANN) and private suffixes and the domains one level below them, from the
  public suffix list of the ``tldextract`` package (its own snapshot, never fetched);
  none for an unknown top-level domain, and no domain for a host that is a suffix itself;
* ``url_protocol``, ``url_port`` (only when the URL names one), ``url_path``, ``url_query``
  (none without a ``?``) as java.net.URL splits a URL; ``dns:`` and ``whois:`` URLs name
  a host too;
* ``crawl``, ``warc_segment`` and ``subset`` from a Common Crawl WARC path
  (``crawl-data/CC-MAIN-2024-10/segments/<segment>/<subset>/...``, or a CC-NEWS path);
  other archives get the collection name given, no segment and the subset ``warc``;
* ``fetch_status`` -1 where the line has no numeric status (revisits), as Common Crawl's;
* ``content_charset``, ``content_languages``, ``content_truncated`` and
  ``fetch_redirect`` from the ``charset`` (or ``encoding``, as Common Crawl's index
  server names it), ``languages``, ``truncated`` and ``redirect`` fields of a line
  indexed with ``--cdx-fields cc``.

    row = row_of("org,commoncrawl)/ 20240518015810 {...}", "my-collection")
    row["url_host_registered_domain"]       # 'commoncrawl.org'

``warc_type`` (cc-index-table's "simple" schema for other archives) is not a column: a CDX
line does not say which WARC record type it came from.
"""
import datetime
import functools
import re
from urllib.parse import unquote_plus

from ..cdx.cdxline import fields_of, split_cdxj

__all__ = ["COLUMNS", "PARTITION_COLUMNS", "LineError", "row_of", "row_values", "arrow_schema",
           "cc_file_parts", "host_parts", "url_parts", "public_suffixes"]

# (name, type, where the value comes from): the flat schema's data columns, in its order.
# Types are Spark SQL's, as in the schema file: string, integer (int32), short (int16),
# timestamp (UTC, stored in milliseconds as Common Crawl's converter stores it).
COLUMNS = (
    ("url_surtkey", "string", "the line's SURT key"),
    ("url", "string", "url"),
    ("url_host_name", "string", "host of url"),
    ("url_host_tld", "string", "host of url"),
    ("url_host_2nd_last_part", "string", "host of url"),
    ("url_host_3rd_last_part", "string", "host of url"),
    ("url_host_4th_last_part", "string", "host of url"),
    ("url_host_5th_last_part", "string", "host of url"),
    ("url_host_registry_suffix", "string", "host of url"),
    ("url_host_registered_domain", "string", "host of url"),
    ("url_host_private_suffix", "string", "host of url"),
    ("url_host_private_domain", "string", "host of url"),
    ("url_host_name_reversed", "string", "host of url"),
    ("url_protocol", "string", "url"),
    ("url_port", "integer", "url"),
    ("url_path", "string", "url"),
    ("url_query", "string", "url"),
    ("fetch_time", "timestamp", "the line's timestamp"),
    ("fetch_status", "short", "status"),
    ("fetch_redirect", "string", "redirect"),
    ("content_digest", "string", "digest"),
    ("content_mime_type", "string", "mime"),
    ("content_mime_detected", "string", "mime-detected"),
    ("content_charset", "string", "charset"),
    ("content_languages", "string", "languages"),
    ("content_truncated", "string", "truncated"),
    ("warc_filename", "string", "filename"),
    ("warc_record_offset", "integer", "offset"),
    ("warc_record_length", "integer", "length"),
    ("warc_segment", "string", "filename"),
)
COLUMN_NAMES = tuple(name for name, _, _ in COLUMNS)
PARTITION_COLUMNS = ("crawl", "subset")
# Subset of an archive that is not one of Common Crawl's
DEFAULT_SUBSET = "warc"
INT32_MAX = (1 << 31) - 1

# Common Crawl's WARC paths (relative to s3://commoncrawl/): main crawls and CC-NEWS
CC_MAIN_PATH = re.compile(
    r"^(?:common-crawl/)?crawl-data/([^/]+)/segments/([^/]+)/(crawldiagnostics|robotstxt|warc|wat|wet)/")
CC_NEWS_PATH = re.compile(r"^(?:common-crawl/)?crawl-data/CC-NEWS/(\d+)/(\d+)/CC-NEWS-(.+)\.warc\.gz")

# java.net hosts, as cc-index-table's HostName tells them apart
IPV4 = re.compile(r"(?:(?:25[0-5]|(?:2[0-4]|1?[0-9])?[0-9])\.){3}(?:25[0-5]|(?:2[0-4]|1?[0-9])?[0-9])\Z")
IPV4_DECIMAL = re.compile(r"(?:(?:25[0-5]|(?:2[0-4]|1?[0-9])?[0-9])\.){0,3}[0-9]+\Z")
IPV6 = re.compile(r"\[[0-9a-fA-F:]+\]\Z")
BAD_PERCENT = re.compile(r"%(?![0-9a-fA-F]{2})")
# A label the public suffix list's domain rule may yield (crawler-commons' strict check)
MAX_LABEL = 63
TIMESTAMP = re.compile(r"\d{4,14}\Z")
# Most URLs: http(s), a host without user, brackets or an empty name, maybe a port (what
# url_parts makes of them, in one match)
PLAIN_URL = re.compile(r"(https?)://([^/?#@\[\]:\s]+)(?::(\d{1,5}))?((?:/[^?#]*)?)(?:\?([^#]*))?(?:#.*)?\Z", re.S)


class LineError(ValueError):
    """A CDX line that cannot become a row."""


@functools.cache
def arrow_schema():
    """The pyarrow schema of the table's data files (the partition columns live in paths).

    Every column is nullable, as in the files Spark writes (and Common Crawl publishes)."""
    import pyarrow as pa
    types = {"string": pa.string(), "integer": pa.int32(), "short": pa.int16(),
             "timestamp": pa.timestamp("ms", tz="UTC")}
    return pa.schema([pa.field(name, types[kind]) for name, kind, _ in COLUMNS])


@functools.lru_cache(maxsize=1 << 12)
def cc_file_parts(filename):
    """(crawl, segment, subset) of a Common Crawl WARC path, or None for any other."""
    match = CC_MAIN_PATH.match(filename)
    if match:
        return match.groups()
    match = CC_NEWS_PATH.match(filename)
    if match:
        return f"CC-NEWS-{match.group(1)}-{match.group(2)}", match.group(3), "news-warc"
    return None


@functools.cache
def public_suffixes():
    """The public suffix list (with its private section) of the ``tldextract`` package:
    its bundled snapshot only, never fetched and never cached on disk."""
    import tldextract
    return tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True,
                                 include_psl_private_domains=True)


def _suffix_and_domain(psl, host, private):
    """(suffix, domain one label below it) of an ASCII host name, crawler-commons' way:
    (None, None) without a known suffix; no domain when the host is a suffix itself, or
    when the label below the suffix is empty or too long."""
    found = psl.extract_str(host, include_psl_private_domains=private)
    if not found.suffix:
        return None, None
    if not found.domain or len(found.domain) > MAX_LABEL or ".." in host:
        return found.suffix, None
    return found.suffix, f"{found.domain}.{found.suffix}"


def _canonical_ipv4(host):
    """The dotted-quad form of a decimal IPv4 address written with 1 to 4 parts (the last
    one fills the remaining bytes, as java.net.InetAddress reads it); None if out of range."""
    parts = [int(p) for p in host.split(".")]
    last_bytes = 5 - len(parts)
    if parts[-1] >= 1 << (8 * last_bytes):
        return None
    value = 0
    for part in parts[:-1]:
        value = value << 8 | part
    value = value << (8 * last_bytes) | parts[-1]
    return ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))


@functools.lru_cache(maxsize=1 << 16)
def host_parts(host):
    """The 11 host columns (url_host_name ... url_host_name_reversed) of a lower-cased host,
    as cc-index-table's HostName makes them (None for what does not apply)."""
    none = (None,) * 10
    if IPV4.match(host) or IPV6.match(host):
        return (host,) + none
    if IPV4_DECIMAL.match(host):
        canonical = _canonical_ipv4(host)
        if canonical is not None:
            return (canonical,) + none
    if "%" in host and not BAD_PERCENT.search(host):
        host = unquote_plus(host, errors="replace")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return (None,) + none
    if host.endswith("."):
        host = host[:-1]
    labels = host.split(".")
    while len(labels) > 1 and not labels[-1]:
        labels.pop()  # as Java's String.split drops trailing empty strings
    labels.reverse()
    parts = (labels + [None] * 5)[:5]
    psl = public_suffixes()
    private_suffix, private_domain = _suffix_and_domain(psl, host, True)
    if private_suffix is None or "." not in private_suffix:
        registry_suffix, registered_domain = private_suffix, private_domain
    else:
        registry_suffix, registered_domain = _suffix_and_domain(psl, host, False)
    return (host, *parts, registry_suffix, registered_domain, private_suffix, private_domain,
            ".".join(labels))


def _normalized_slashes(url):
    """``http:/x`` or ``http:///x`` as ``http://x`` (cc-index-table's WarcUri does so when a
    URL yields no host); None for anything else."""
    for scheme in ("http:", "https:"):
        if url.startswith(scheme):
            rest = url[len(scheme):]
            stripped = rest.lstrip("/")
            return None if len(rest) - len(stripped) == 2 else scheme + "//" + stripped
    return None


def url_parts(url):
    """(protocol, host, port, path, query) of a URL, split as java.net.URL (or, for
    ``dns:`` and ``whois:`` URLs, java.net.URI) splits it; the host lower-cased (but a
    ``dns:`` or ``whois:`` one, as given), the port None unless given, the query None
    without a ``?``."""
    plain = PLAIN_URL.match(url)
    if plain:
        scheme, host, port, path, query = plain.groups()
        return scheme, host.lower(), int(port) if port else None, path, query
    parts = _split_url(url.strip())
    if parts[1] is None or parts[1] == "":
        fixed = _normalized_slashes(url.strip())
        if fixed is not None:
            return _split_url(fixed)
    return parts


def _split_url(url):
    scheme, colon, rest = url.partition(":")
    if not colon or not scheme:
        return None, None, None, None, None
    scheme = scheme.lower()
    if not rest.startswith("//"):
        # an opaque URI: no port, path or query
        return scheme, rest.split("#", 1)[0] if scheme == "dns" else None, None, None, None
    rest = rest[2:].split("#", 1)[0]
    end = len(rest)
    for stop in "/?":
        found = rest.find(stop)
        if 0 <= found < end:
            end = found
    authority, rest = rest[:end], rest[end:]
    path, question, query = rest.partition("?")
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        host, _, after = hostport.partition("]")
        host += "]"
        port = after[1:] if after.startswith(":") else ""
    else:
        host, _, port = hostport.partition(":")
    if scheme == "whois":
        # whois://whois.example.net/example.com names the domain looked up (as given)
        host = path.lstrip("/")
    else:
        host = host.lower()
    return (scheme, host, int(port) if port.isdigit() and len(port) < 6 else None,
            path, query if question else None)


@functools.lru_cache(maxsize=1 << 12)
def _day_millis(day):
    date = datetime.date(int(day[:4]), int(day[4:6]), int(day[6:8]))
    return (date.toordinal() - 719163) * 86_400_000  # 719163: 1970-01-01


def fetch_millis(timestamp):
    """Milliseconds since 1970 (UTC) of a CDX timestamp (YYYY[MMDDhhmmss]; a shorter one
    is the start of the period it names, as pywb reads it)."""
    if not TIMESTAMP.match(timestamp):
        raise LineError(f"bad timestamp {timestamp!r}: expected 14 digits")
    padded = timestamp + "0101000000"[len(timestamp) - 4:]
    hour, minute, second = int(padded[8:10]), int(padded[10:12]), int(padded[12:14])
    try:
        if hour > 23 or minute > 59 or second > 59:
            raise ValueError("no such time of day")
        return _day_millis(padded[:8]) + ((hour * 60 + minute) * 60 + second) * 1000
    except ValueError as exc:
        raise LineError(f"bad timestamp {timestamp!r}: {exc}") from None


def _int32(fields, name):
    value = fields.get(name)
    if value is None or value == "-":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise LineError(f"bad {name} {value!r}: expected a whole number") from None
    if not 0 <= number <= INT32_MAX:
        raise LineError(f"{name} {number} does not fit the schema's integer column "
                        "(at most 2^31-1, as in Common Crawl's table)")
    return number


def _status(value):
    if isinstance(value, int):
        return value if -32768 <= value < 32768 else -1
    return int(value) if value and value.isdigit() and len(value) < 5 else -1


def parse_line(line):
    """(urlkey, timestamp, fields) of a CDXJ line or a classic CDX line (str): a CDXJ
    line's fields as written (Common Crawl's values as they are), a classic line's
    without its "-" values."""
    try:
        cdxj = split_cdxj(line)
        if cdxj is not None:
            return cdxj
        fields = fields_of(line)
    except ValueError as exc:
        raise LineError(str(exc)) from None
    return (fields.pop("urlkey"), fields.pop("timestamp"),
            {k: v for k, v in fields.items() if v != "-"})


def _text(fields, name):
    value = fields.get(name)
    return value if isinstance(value, str) else None


def row_values(line, collection):
    """The row of one CDX line as a tuple: the data columns' values in ``COLUMNS`` order,
    then ``crawl`` and ``subset``. ``collection`` is the crawl of archives that are not
    Common Crawl's. Raises LineError for a line that is no CDX line or carries an
    impossible value."""
    key, timestamp, fields = parse_line(line)
    url, filename = fields.get("url"), fields.get("filename")
    if not key or not isinstance(url, str) or not isinstance(filename, str):
        raise LineError("not a CDX line with a URL key, a url and a filename")
    protocol, host, port, path, query = url_parts(url)
    parts = cc_file_parts(filename)
    crawl, segment, subset = parts if parts else (collection, None, DEFAULT_SUBSET)
    return (key, url, *(host_parts(host) if host is not None else NO_HOST),
            protocol, port, path, query, fetch_millis(timestamp), _status(fields.get("status")),
            _text(fields, "redirect"), _text(fields, "digest"), _text(fields, "mime"),
            _text(fields, "mime-detected"), _text(fields, "charset") or _text(fields, "encoding"),
            _text(fields, "languages"), _text(fields, "truncated"), filename,
            _int32(fields, "offset"), _int32(fields, "length"), segment, crawl, subset)


ROW_NAMES = COLUMN_NAMES + PARTITION_COLUMNS
NO_HOST = (None,) * 11


def row_of(line, collection):
    """``row_values`` as ``{column: value}``, the partition columns included."""
    return dict(zip(ROW_NAMES, row_values(line, collection)))
