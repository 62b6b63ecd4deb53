"""One CDX line: its formats as data, and what is read from a line.

A line is ``urlkey timestamp rest``: in CDXJ ``rest`` is a JSON object of named
fields (pywb's and Common Crawl's indexes); in the classic formats it is more
space-separated fields in the order of a *legend*, written with the field letters of
the ``CDX N b a ...`` header line. pywb reads the four legends below, telling them
apart by their field count; indexing writes CDXJ, CDX11 and CDX9.

    format_line(fields, "cdx11")   # fields of a record -> its line (indexing)
    header_line("cdx11")           # ' CDX N b a m s k r M S V g\\n'
    is_cdx_line(line)              # an index line, not a header, blank or report line
    fields_of(line)                # line -> {"urlkey": ..., "timestamp": ..., "url": ...}
    split_cdxj(line)               # CDXJ line -> (urlkey, timestamp, its JSON as written)
    location(line)                 # line -> Location(filename, offset, length)
    convert(line, "cdx11", "cdxj") # a line in another format, or with its key recomputed
    name_problem(name, "cdx11")    # why an archive name cannot be a line's filename
"""
import json
import re
from collections import namedtuple
from urllib.parse import quote

# Field letters of the classic CDX header line, and the names pywb's CDXObject gives them
FIELD_LETTERS = {
    "N": "urlkey", "b": "timestamp", "a": "url", "m": "mime", "s": "status",
    "k": "digest", "r": "redirect", "M": "robotflags", "S": "length", "V": "offset",
    "g": "filename",
}
LEGENDS = {
    "cdx11": "N b a m s k r M S V g",
    "cdx10": "N b a m s k r M V g",
    "cdx9": "N b a m s k r V g",
    "cdx7": "N b a m s k S",
}
# The field names of each legend
NAMES = {fmt: tuple(FIELD_LETTERS[letter] for letter in legend.split())
         for fmt, legend in LEGENDS.items()}
_BY_COUNT = {len(names): names for names in NAMES.values()}
# What indexing writes
FORMATS = ("cdxj", "cdx11", "cdx9")
# Key order of pywb's CDXJ JSON (its entry dict starts with "metadata"), and after it, for a
# record of a WACZ (whose name ``filename`` is, ``offset`` into it), its ZIP entry's name
CDXJ_KEYS = ("metadata", "url", "mime", "mime-detected", "status", "digest", "length",
             "offset", "filename", "entry")
# What Common Crawl's crawler (commoncrawl/nutch, WarcCdxWriter) adds after pywb's keys,
# where the WARC has them: the charset and ISO-639-3 languages detected in the payload
# (from the metadata record that follows each response), the reason a payload was
# truncated (WARC-Truncated) and the target of a redirect (its Location, made absolute).
# Their index server answers with "encoding" for "charset"; their published index files,
# and cc-index-table, name it "charset".
CC_KEYS = ("charset", "languages", "truncated", "redirect")
# The keys of a CDXJ line, by ``--cdx-fields``: pywb's (the default, byte for byte), or
# Common Crawl's
CDX_FIELDS = {"pywb": CDXJ_KEYS, "cc": CDXJ_KEYS + CC_KEYS}
# pywb's keys with --post-append: a POST or PUT capture's request method and body
# (``postquery``) come after the offset
_AFTER = CDXJ_KEYS.index("offset") + 1
POST_KEYS = CDXJ_KEYS[:_AFTER] + ("method", "requestBody") + CDXJ_KEYS[_AFTER:]
# Other names of fields, as pywb's CDX server takes them in filters, and as some CDXJ
# writers name their JSON keys
ALIASES = {"u": "url", "original": "url", "statuscode": "status", "s": "status",
           "mimetype": "mime", "m": "mime", "l": "length", "o": "offset", "d": "digest",
           "t": "timestamp", "k": "urlkey", "f": "filename"}

# urlkey, timestamp, then the rest; anything else in a CDX directory is not an index line
# (the `` CDX N b a ...`` header, blank lines, the lines of an .errors.json report, which
# Hadoop reads too when it is given the whole directory)
CDX_LINE = r"\S+ \d+ "
# After the urlkey and timestamp of a CDX11 line: the rest of its legend (the filename,
# last, may hold spaces)
_CDX11_REST = NAMES["cdx11"][2:]

# A JSON string, as json.dumps writes one (ASCII only)
_json_string = json.encoder.encode_basestring_ascii

# Where a line's record is: in ``filename``, ``length`` bytes from ``offset``
Location = namedtuple("Location", "filename offset length")


def header_line(fmt):
    """The header line a CDX file of this format starts with ('' for CDXJ)."""
    return f" CDX {LEGENDS[fmt]}\n" if fmt in LEGENDS else ""


def format_line(fields, fmt="cdxj", keys=CDXJ_KEYS):
    """One CDX line (with its newline) in the given format; a CDXJ line has ``keys``, in
    that order, where they have a value."""
    if fmt == "cdxj":
        # what json.dumps writes for a dict of strings, without its generic machinery
        data = ", ".join([f'"{key}": {_json_string(value)}' for key in keys
                          if (value := fields.get(key)) not in (None, "", "-")])
        return f"{fields['urlkey']} {fields['timestamp']} {{{data}}}\n"
    return " ".join([fields.get(name) or "-" for name in NAMES[fmt]]) + "\n"


def is_cdx_line(line):
    """Whether ``line`` (from a CDX file, or anything beside one) belongs in a cluster."""
    return _cdx_line(line) is not None


def _cdx_line(line):
    # compiled when first used, not at every start (indexing never needs it): then this
    # name is the compiled pattern's match itself, as quick per line as before
    global _cdx_line
    _cdx_line = re.compile(CDX_LINE).match
    return _cdx_line(line)


def split_cdxj(line):
    """``(urlkey, timestamp, record)`` of a CDXJ line (str), ``record`` its JSON object as
    written; None for a line that is not CDXJ. ValueError for a JSON part that is not an
    object."""
    parts = line.rstrip().split(" ", 2)
    if len(parts) < 3 or not parts[2].startswith("{"):
        return None
    try:
        record = json.loads(parts[2])
    except ValueError as exc:
        raise ValueError(f"bad JSON in a CDXJ line: {exc}") from None
    if not isinstance(record, dict):
        raise ValueError(f"the JSON of a CDXJ line is not an object: {line[:200]!r}")
    return parts[0], parts[1], record


def fields_of(line) -> dict:
    """The fields of a CDXJ or classic CDX line (bytes or str), named and valued as pywb's
    CDXObject names them (all values text; a non-ASCII ``url`` percent-encoded)."""
    if isinstance(line, bytes):
        line = line.decode("utf-8")
    line = line.rstrip()
    cdxj = split_cdxj(line)
    if cdxj is not None:
        urlkey, timestamp, record = cdxj
        fields = {"urlkey": urlkey, "timestamp": timestamp}
        if isinstance(record.get("status"), int):
            record["status"] = str(record["status"])
        for name, value in record.items():
            name = ALIASES.get(name, name)
            if name == "url" and not value.isascii():
                value = quote(value.encode("utf-8"), safe=":/")
            fields[name] = value
        return fields
    values = line.split(" ")
    names = _BY_COUNT.get(len(values))
    if names is None:
        raise ValueError(f"not a CDXJ line nor a CDX line of a known format "
                         f"({len(values)} fields): {line[:200]!r}")
    return dict(zip(names, values))


def location(line):
    """``Location`` (filename, offset, length) of the record of a CDXJ or CDX11 line
    (bytes or str); ValueError for any other line."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    fields = line.rstrip("\r\n").split(" ", 2)
    if len(fields) < 3:
        raise ValueError(f"not a CDX line: {line[:200]!r}")
    try:
        cdxj = split_cdxj(line)
        if cdxj is not None:
            data = cdxj[2]
            return Location(data["filename"], int(data["offset"]), int(data["length"]))
        values = fields[2].split(" ", len(_CDX11_REST) - 1)
        if len(values) == len(_CDX11_REST):
            named = dict(zip(_CDX11_REST, values))
            return Location(named["filename"], int(named["offset"]), int(named["length"]))
    except (ValueError, KeyError, TypeError):
        pass
    raise ValueError(f"no filename, offset and length in this CDX line (CDXJ or CDX11 "
                     f"needed; CDX9 has no length): {line[:200]!r}")


# White space as the readers of a classic line split it: pywb at spaces (and it strips
# the line's end), Hadoop's and our readers at line ends, str.split at any of it
_WHITE_SPACE = re.compile(r"[\s\x1c-\x1f]")
# A URL key that is a URL without its scheme (``mocho.pt/cab/x``, as Wayback's non-SURT
# canonicalizer writes them), not a SURT key (``pt,mocho)/cab/x``): a host with a dot and
# no comma or parenthesis, then a port, a path or query, or nothing
PLAIN_URL_KEY = re.compile(r"[^\s,():/?]+\.[^\s,():/?]+(?::[0-9]+)?(?:[/?]|\Z)")


def name_problem(name, fmt):
    """Why the archive name ``name`` cannot be the ``filename`` of a ``fmt`` line; None if it
    can. A classic line separates its fields by spaces, and pywb writes a name as it is
    (it neither escapes nor reads escapes): a name with white space would come back with
    another field count, or cut at a line end. CDXJ's JSON escapes any character."""
    if fmt == "cdxj" or not _WHITE_SPACE.search(name):
        return None
    return (f"its name {name!r} holds white space, which a {fmt} line cannot carry (its fields "
            "are separated by spaces, and pywb does not escape them): rename the file, or "
            "index as CDXJ (--cdx-format cdxj)")


def _surt_key(fields):
    """The SURT key of a line's fields: of its original URL when that is absolute, else of
    its key when the key is a URL without scheme (Wayback's non-SURT keys, whose lines may
    hold only the host as their URL), else its key."""
    from .urlkey import url_key
    url, key = fields.get("url", ""), fields["urlkey"]
    try:
        if "://" in url:
            return url_key(url)
        if PLAIN_URL_KEY.match(key):
            return url_key(key)
    except Exception as exc:  # surt raises assorted errors on malformed URLs
        raise ValueError(f"cannot make a SURT key of {url or key!r}: {exc}") from None
    return key


def convert(line, source, target, rekey=False):
    """``line`` (bytes, a well-formed ``source`` line) as a ``target`` line (bytes, no
    newline), with its URL key made a SURT key with ``rekey`` (``_surt_key``); ValueError
    for a line the target cannot carry. To CDXJ go pywb's keys, to CDX9 no length; a
    line converted to its own format changes its key only."""
    text = line.decode("utf-8")
    fields = fields_of(text)
    key = _surt_key(fields) if rekey else fields["urlkey"]
    if source == target:
        return (key + text[len(fields["urlkey"]):]).encode("utf-8")
    fields = {name: str(value) for name, value in fields.items()}
    fields["urlkey"] = key
    if target != "cdxj":
        fields["url"] = _WHITE_SPACE.sub(lambda m: quote(m.group()), fields.get("url", ""))
        for name in NAMES[target]:
            if _WHITE_SPACE.search(fields.get(name) or "-"):
                raise ValueError(f"its {name} {fields[name][:200]!r} holds white space, which a "
                                 f"{target} line cannot carry")
    return format_line(fields, target).rstrip("\n").encode("utf-8")
