"""The CDX server API's parameters and what it does with the lines a lookup found: as
pywb does it (``filter``, ``from``/``to``, ``limit``, ``fl``, the output formats) and as
the Wayback Machine does what pywb lacks (``collapse``, ``limit=-N``, resume keys).

``CdxRequest`` holds the parameters of one request, from an HTTP query string
(``CdxRequest.from_query``) or from ``query``'s options (``CdxRequest.from_args``): the
options of ``options.CDX_API``, each naming the parameter it mirrors. ``collection``
answers it over one or more clusters. ``process`` is the line-by-line part on its own:

    lines = cluster.lookup("example.com/*")
    for out in process(lines, filters=["=status:200", "!~mime:image/"], from_ts="2023",
                       to_ts="202406", limit=100, output="json"):
        sys.stdout.buffer.write(out)

A filter is ``[!][=|~]FIELD:VALUE`` (``FIELD:`` may be left out to match the whole
line): plain ``mime:html`` means the field *contains* the value, ``=status:200`` that
it equals it, ``~url:.*\\.pdf$`` that the regular expression matches from the field's
start; ``!`` inverts. Field names are CDXJ's (``url mime status digest length offset
filename urlkey timestamp``) or the classic legend's (``u m s d l o f k t``, and
``original mimetype statuscode``). pywb maps ``s`` to ``length``, a slip in its alias
table; here ``s`` is the status code, as in the CDX legend.
"""
import base64
import json
import re
import time
import zlib

from warcio.timeutils import PAD_14_DOWN, PAD_14_UP, pad_timestamp, timestamp_to_http_date

from .. import options
from ..cdx.cdxline import ALIASES, CC_KEYS, CDXJ_KEYS, FIELD_LETTERS, NAMES, fields_of
from ..cdx.postquery import lookup_url
from ..zipnum.reader import search_range

__all__ = ["OUTPUTS", "CdxRequest", "Limits", "BadParameter", "RequestTimeout", "Capture", "parse_filter",
           "check_timestamp", "process", "fields_of", "formatter", "resume_key", "parse_resume_key"]

OUTPUTS = options.QUERY_OUTPUTS
CONTENT_TYPES = {"cdxj": "text/x-cdxj", "json": "text/x-ndjson", "cdx11": "text/plain",
                 "text": "text/plain", "link": "application/link-format"}

# The fields of the cdx11 output
CDX11_FIELDS = NAMES["cdx11"]
# The fields a request may name (fl, filter, collapse): the classic legends', those of the
# CDXJ lines pywb, cdxj-indexer and Common Crawl write (their server says "encoding" for
# "charset"; pywb adds orig.* to a revisit, and access where rules are in force),
# cdxj-indexer's req.http:HEADER, and ALIASES.
# A line may lack one (fl leaves it out, a filter sees ''); a name outside them is a typo
# that would match nothing.
KNOWN_FIELDS = tuple(dict.fromkeys((*FIELD_LETTERS.values(), *CDXJ_KEYS, *CC_KEYS, "encoding", "method",
                                    "requestBody", "orig.length", "orig.offset", "orig.filename", "access")))


class RequestTimeout(TimeoutError):
    """A request that took longer than its deadline."""


class BadParameter(ValueError):
    """A parameter that cannot be answered; ``param`` is its API name (``limit``)."""

    def __init__(self, param, message, named=True):
        super().__init__(f"{param}: {message}" if named else message)
        self.param = param
        self.message = message
        self.named = named

    def in_options(self):
        """The message in the words of ``query``'s options: ``--limit`` for ``limit``,
        ``--page N`` for ``page=N``, ``--sort closest`` for ``sort=closest``."""
        names = {param: option.name for option in CdxRequest.OPTIONS for param in option.params}
        words = "|".join(sorted(names, key=len, reverse=True))
        camel = "|".join(name for name in names if name != name.lower())

        def option(match):
            if match.group(1):
                return " ".join(filter(None, (names[match.group(1)], match.group(2))))
            return names[match.group(3)]
        text = re.sub(rf"\b({words})=(-?\w*)|\b({camel})\b", option, self.message)
        return f"{names.get(self.param, self.param)}: {text}" if self.named else text


class Limits:
    """Bounds on what one request may ask (a server's; ``query`` sets none): ``limit``,
    ``pageSize``, regular expressions, filters, URL length and seconds a request may
    take. (The lines an answer holds are bounded for all: ``HELD_LINES``.)"""

    def __init__(self, limit=None, page_size=None, regex=None, filters=None, url=None, seconds=None):
        self.limit, self.page_size, self.regex = limit, page_size, regex
        self.filters, self.url, self.seconds = filters, url, seconds


UNBOUNDED = Limits()
# The most lines an answer holds: sort=closest over several URLs (or with collapse) sorts
# its limit lines (Common Crawl's take ~700 bytes each held: ~3.5 MiB); everything else
# streams. (pywb's remote index asks 100, cdx_toolkit 1000.)
HELD_LINES = 5_000


class CdxRequest(options.Options):
    """One request's parameters, checked (``BadParameter`` naming the first bad one): the
    options of ``options.CDX_API`` as attributes named by their destinations (``from_ts``,
    ``filters``, ``show_num_captures``...), and the key range (``start``, ``end``)."""

    OPTIONS = options.CDX_API
    # who asks: the user or access point whose access rules hold (pywb's X-Pywb-ACL-User)
    EXTRA = {"acl_user": None}

    def __init__(self, url=None, *, limits=UNBOUNDED, **values):
        super().__init__(url=url, **values)
        if isinstance(self.fields, str):
            self.fields = self.fields.split(",")
        self.fields = [_known_field("fl", f) for f in self.fields] if self.fields else None
        if self.sort is None and self.closest:
            self.sort = "closest"  # pywb sorts by closeness whenever closest= is given
        self.resume = parse_resume_key(self.resume_key) if self.resume_key else None
        self.collapse = _parse_collapse(self.collapse) if self.collapse else None
        self._check(limits)

    @classmethod
    def from_query(cls, params, limits=UNBOUNDED):
        """The request of a parsed query string (``{name: [values]}``, as
        ``urllib.parse.parse_qs`` gives it), named as pywb's and the Wayback Machine's
        CDX servers name them; parameters it does not know are ignored, and an empty
        value is no value, as they do (pywb's remote index sends ``closest=`` when it has
        no timestamp)."""
        params = {name: [value for value in given if value] for name, given in params.items()}
        values = {}
        for option in cls.OPTIONS:
            name = next((param for param in option.params if params.get(param)), None)
            if name is None:
                continue
            given = params[name]
            if isinstance(option, options.Flag):
                values[option.dest] = _boolean(name, given[-1])
            elif option.kwargs.get("action") == "append":
                values[option.dest] = list(given)
            elif "type" in option.kwargs:
                values[option.dest] = _number(name, given[-1])
            else:
                values[option.dest] = given[-1]
        reverse = (params.get("reverse") or [""])[-1].lower()
        if values.get("sort") is None and reverse not in ("", "0", "false", "f", "off"):
            values["sort"] = "reverse"  # pywb's older spelling, read as pywb's to_bool reads it
        if values.get("sort") == "closest" and not values.get("closest"):
            del values["sort"]  # pywb's server sorts by closeness only given a timestamp
        return cls(limits=limits, **values)

    def _check(self, limits):
        if not self.url:
            raise BadParameter("url", "missing: give url=example.com/path, url=example.com/* "
                                      "or url=*.example.com")
        if self.match_type is not None and self.match_type not in options.MATCH_TYPES:
            raise BadParameter("matchType", f"unknown match type {self.match_type!r}: "
                                            f"expected one of {', '.join(options.MATCH_TYPES)}")
        if limits.url and len(self.url) > limits.url:
            raise BadParameter("url", f"longer than {limits.url} characters")
        lookup = self._lookup_url()
        try:
            self.start, self.end = (k.encode() for k in search_range(lookup, self.match_type or "exact"))
        except ValueError as exc:
            raise BadParameter("url", str(exc)) from None
        if self.output not in OUTPUTS:
            raise BadParameter("output", f"unknown output {self.output!r}: expected one of "
                                         f"{', '.join(OUTPUTS)}")
        for name, value in (("from", self.from_ts), ("to", self.to_ts), ("closest", self.closest)):
            try:
                check_timestamp(value, name)
            except ValueError as exc:
                raise BadParameter(name, str(exc)) from None
        if limits.filters is not None and len(self.filters) > limits.filters:
            raise BadParameter("filter", f"more than {limits.filters} filters")
        self.predicates = []
        for spec in self.filters:
            if limits.regex and "~" in spec[:3] and len(spec) > limits.regex:
                raise BadParameter("filter", f"a regular expression longer than {limits.regex} "
                                             f"characters: {spec[:60]!r}...")
            try:
                self.predicates.append(parse_filter(spec))
            except ValueError as exc:
                raise BadParameter("filter", str(exc)) from None
        self._check_numbers(limits)
        self._check_together()

    def _lookup_url(self):
        """The URL whose key is looked up: with a method other than GET, the URL with the
        method and request body appended, as ``--post-append`` keys the capture."""
        if self.request_body and (not self.method or self.method.upper() == "GET"):
            raise BadParameter("requestBody", "goes with method=POST (or PUT...): the body of "
                                              "which request?")
        url = lookup_url(self.url, self.method, self.request_body)
        if url != self.url and ((self.match_type or "exact") != "exact" or "*" in self.url):
            raise BadParameter("method", "finds the captures of one request: it goes with an "
                                         "exact url, not a prefix or domain")
        return url

    def _check_numbers(self, limits):
        if self.limit is not None:
            bound = limits.limit
            if bound and abs(self.limit) > bound:
                raise BadParameter("limit", f"at most {bound} (or -{bound}) lines a request; "
                                            "ask for more with resumeKey or page")
        if self.page is not None and self.page < 0:
            raise BadParameter("page", f"pages count from 0, got {self.page}")
        if self.page_size is not None:
            if self.page_size < 1:
                raise BadParameter("pageSize", f"at least 1 block, got {self.page_size}")
            if limits.page_size and self.page_size > limits.page_size:
                raise BadParameter("pageSize", f"at most {limits.page_size} blocks")
        if self.sort not in (None, "reverse", "closest", "regular", "default"):
            raise BadParameter("sort", f"expected reverse or closest, got {self.sort!r}")
        if self.sort in ("regular", "default"):
            self.sort = None
        if self.sort == "closest" and not self.closest:
            raise BadParameter("closest", "sort=closest needs closest=TIMESTAMP (e.g. 20240131)")

    def _check_together(self):
        modes = [name for name, on in (("showNumPages", self.show_num_pages),
                                       ("showPagedIndex", self.show_paged_index),
                                       ("showNumCaptures", self.show_num_captures)) if on]
        if len(modes) > 1:
            raise BadParameter(modes[1], f"goes not with {modes[0]}: ask one at a time")
        paged = self.page is not None or self.show_num_pages or self.show_paged_index
        if self.page_size is not None and not paged:
            raise BadParameter("pageSize", "goes with page=N, showNumPages or showPagedIndex")
        if self.page is not None and self.show_num_pages:
            raise BadParameter("page", "goes not with showNumPages: ask for the count first")
        if self.show_num_captures and (self.page is not None or self.resume):
            raise BadParameter("showNumCaptures", "counts the whole result: without page or resumeKey")
        resumed = self.resume or self.show_resume_key
        if resumed and (self.page is not None or paged):
            raise BadParameter("resumeKey" if self.resume else "showResumeKey",
                               "goes not with page, showNumPages or showPagedIndex: pages and "
                               "resume keys are two ways through a result; use one")
        if resumed and self.sort == "closest":
            raise BadParameter("resumeKey" if self.resume else "showResumeKey",
                               "goes not with sort=closest (ask a bigger limit)")
        if resumed and self.limit is not None and self.limit < 0:
            raise BadParameter("limit", "limit=-N (the last N) goes not with resume keys")
        if self.show_resume_key and self.output == "link":
            raise BadParameter("showResumeKey", "goes not with output=link")
        if self.sort == "closest" and self.limit is not None and self.limit < 0:
            raise BadParameter("limit", "limit=-N goes not with sort=closest")
        if self.sorts_held and self.limit is not None and self.limit > HELD_LINES:
            raise BadParameter("limit", f"at most {HELD_LINES} with sort=closest over several URLs "
                                        "(or with collapse): those lines are held to be sorted; an "
                                        "exact url streams any limit")
        if self.page is not None and (self.sort or self.collapse or (self.limit or 0) < 0):
            raise BadParameter("page", "a page is a run of blocks in index order: it goes not "
                                       "with sort, collapse or limit=-N")
        if self.resume and not self.start <= self.resume[0] < self.end:
            raise BadParameter("resumeKey", "does not belong to this query (another url or matchType?)")

    @property
    def range(self):
        return self.start, self.end

    @property
    def sorts_held(self):
        """Whether the answer is sorted in memory: by closeness over several URLs (an
        exact URL's captures are in time order already) or collapsed."""
        return self.sort == "closest" and (self.end != self.start + b"!" or bool(self.collapse))


def _boolean(name, text):
    text = text.lower()
    if text not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        raise BadParameter(name, f"expected true or false, got {text!r}")
    return text in ("true", "1", "yes", "on")


def _number(name, text):
    value = options.whole_number(text)
    if value is None:
        raise BadParameter(name, f"expected a whole number, got {text!r}")
    return value


def _parse_collapse(spec):
    field, colon, length = spec.partition(":")
    if not field or (colon and not (options.whole_number(length) or 0) >= 1):
        raise BadParameter("collapse", f"expected FIELD or FIELD:N (collapse=digest, "
                                       f"collapse=timestamp:8), got {spec!r}")
    return _known_field("collapse", field), int(length) if colon else None


def known_field(name, where=""):
    """The field ``name`` names (``s`` is ``status``); ValueError naming the known ones
    if it names none."""
    name = ALIASES.get(name, name)
    if name not in KNOWN_FIELDS and not name.startswith("req.http:"):
        raise ValueError(f"unknown field {name!r}{where}: expected one of {', '.join(KNOWN_FIELDS)}, "
                         f"req.http:HEADER, or {', '.join(ALIASES)}")
    return name


def _known_field(param, name):
    try:
        return known_field(name)
    except ValueError as exc:
        raise BadParameter(param, str(exc)) from None


class Capture:
    """A line as it passes through a request: its fields parsed when first needed, and
    how many lines equal to it came before it and with it (for resume keys); ``access``:
    what the rules in force made of it ("allow" or "block"; None without rules)."""

    __slots__ = ("line", "copy", "_fields", "access")

    def __init__(self, line, copy=1, access=None):
        self.line = line
        self.copy = copy
        self._fields = None
        self.access = access

    @property
    def fields(self):
        if self._fields is None:
            self._fields = fields_of(self.line)
        return self._fields

    def value(self, name):
        """One field's value, without parsing the line for the key or timestamp."""
        if name in ("urlkey", "timestamp"):
            parts = self.line.split(b" ", 2)
            if len(parts) == 3:
                return parts[name == "timestamp"].decode("utf-8", "replace")
        return str(self.fields.get(name, ""))


class _Filter:
    # a request's deadline, set by whoever runs it: a regular expression that backtracks
    # without end (``(a+)+$``) is stopped there, not after it
    deadline = None

    def __init__(self, spec):
        text = spec
        self.invert = text.startswith("!")
        text = text[self.invert:]
        self.mode = text[0] if text[:1] in ("=", "~") else "contains"
        text = text[self.mode != "contains":]
        field, colon, value = text.partition(":")
        self.field, self.value = (known_field(field, f" in {spec!r}") if field else "", value) if colon else ("", text)
        if self.mode == "~":
            # the regex module: Python's re, with a time limit on a match
            import regex
            try:
                self.regex = regex.compile(self.value, regex.VERSION0)
            except (regex.error, OverflowError, RecursionError) as exc:
                raise ValueError(f"bad regular expression in filter {spec!r}: {exc}") from None

    def __call__(self, line, fields):
        value = line.rstrip().decode("utf-8") if not self.field else str(fields.get(self.field, ""))
        if self.mode == "=":
            matched = value == self.value
        elif self.mode == "~":
            timeout = None if self.deadline is None else max(self.deadline - time.monotonic(), 0.001)
            try:
                matched = self.regex.match(value, timeout=timeout) is not None
            except TimeoutError:
                raise RequestTimeout("the request took too long") from None
        else:
            matched = self.value in value
        return matched != self.invert


def parse_filter(spec: str):
    """A predicate ``(line, fields) -> bool`` for a filter ``[!][=|~]FIELD:VALUE``."""
    if not spec or spec in ("!", "=", "~", "!=", "!~"):
        raise ValueError(f"empty filter {spec!r}: expected [!][=|~]FIELD:VALUE, e.g. '=status:200'")
    return _Filter(spec)


def check_timestamp(text, name):
    """``text`` if it is a timestamp prefix (1-14 digits of yyyyMMddhhmmss), else ValueError."""
    if text is not None and not re.fullmatch(r"[0-9]{1,14}", text):
        raise ValueError(f"{name} must be a timestamp of 1 to 14 digits (yyyyMMddhhmmss, "
                         f"e.g. 2024 or 20240131), got {text!r}")
    return text


def selected(captures, filters=(), from_ts=None, to_ts=None):
    """The captures that pass every filter and lie within ``from``/``to`` (inclusive,
    padded to 14 digits as pywb pads them)."""
    low = pad_timestamp(from_ts, PAD_14_DOWN) if from_ts else None
    high = pad_timestamp(to_ts, PAD_14_UP) if to_ts else None
    for capture in captures:
        if filters and not all(f(capture.line, capture.fields) for f in filters):
            continue
        if low or high:
            timestamp = capture.value("timestamp")
            if (low and timestamp < low) or (high and timestamp > high):
                continue
        yield capture


def collapsed(captures, collapse, backwards=False, after=None):
    """Drop a capture whose field (or its first N characters) equals that of the capture
    before it in index order, as the Wayback Machine's ``collapse=FIELD[:N]``. Going
    ``backwards`` the capture kept of each run is still the first in index order.
    ``after``: the capture before the first one (a resumed request's last line)."""
    name, length = collapse

    def key(capture):
        return capture.value(name)[:length]

    if not backwards:
        last = key(after) if after is not None else None
        for capture in captures:
            value = key(capture)
            if value != last:
                last = value
                yield capture
        return
    captures = iter(captures)
    current = next(captures, None)
    for before in captures:
        if key(before) != key(current):
            yield current
        current = before
    if current is not None:
        yield current


def formatter(output, fields=None):
    """A function: capture -> output line (bytes) for ``output``, with ``fl`` ``fields``
    as pywb writes them (link lines are joined by ``timemap``)."""
    if output == "json":
        if fields:
            return lambda c: (json.dumps({f: v for f in fields if (v := _field(c, f)) is not None}) + "\n").encode("utf-8")
        return lambda c: (json.dumps(_marked(c, c.fields)) + "\n").encode("utf-8")
    if fields or output == "cdx11":
        names = fields or CDX11_FIELDS
        if output == "cdxj":
            def cdxj(c):
                rest = {f: v for f in names if f not in ("urlkey", "timestamp") and (v := _field(c, f)) is not None}
                return f"{c.fields['urlkey']} {c.fields['timestamp']} {json.dumps(rest)}\n".encode("utf-8")
            return cdxj
        return lambda c: (" ".join(str(v if (v := _field(c, f)) is not None else "-") for f in names) + "\n").encode("utf-8")
    if output == "link":
        return _link
    if output == "text":
        return lambda c: c.line.rstrip() + b"\n"  # pywb's text is the line as stored, unmarked

    def as_cdxj(c):
        parts = c.line.split(b" ", 2)
        if len(parts) == 3 and parts[2][:1] == b"{":
            if c.access is None:
                return c.line.rstrip() + b"\n"
            stored = c.line.rstrip()
            # pywb's mark, after the stored fields
            return stored[:-1] + (b", " if stored[-2:] != b"{}" else b"") + b'"access": "%s"}\n' % c.access.encode()
        rest = {f: v for f, v in c.fields.items() if f not in ("urlkey", "timestamp")}
        return f"{c.fields['urlkey']} {c.fields['timestamp']} {json.dumps(_marked(c, rest))}\n".encode("utf-8")
    return as_cdxj


def _field(capture, name):
    """A field of ``capture`` (its ``access`` mark too), None if it has none."""
    if name == "access":
        return capture.access
    return capture.fields.get(name)


def _marked(capture, fields):
    """``fields`` with the capture's ``access`` mark after them, as pywb adds it."""
    return fields if capture.access is None else {**fields, "access": capture.access}


def _link(capture):
    fields = capture.fields
    url = fields.get("url") or f"file://{fields.get('filename')}:{fields.get('offset')}:{fields.get('length')}"
    date = timestamp_to_http_date(fields["timestamp"])
    return f'<{url}>; rel="memento"; datetime="{date}"'.encode("utf-8")


def timemap(links):
    """pywb's TimeMap body: the memento links joined by ``,\\n``, the last ending ``\\n``."""
    previous = None
    for link in links:
        if previous is not None:
            yield previous + b",\n"
        previous = link
    if previous is not None:
        yield previous + b"\n"


def resume_key(capture) -> str:
    """A key that names the position just after ``capture``: its line and which of the
    lines equal to it it was. Opaque, URL-safe, and all a request needs to go on."""
    payload = zlib.compress(b"%d:" % capture.copy + capture.line, 9)
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")


def parse_resume_key(key):
    """``(line, copy)`` of a ``resume_key``; BadParameter if it is none."""
    try:
        data = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
        inflate = zlib.decompressobj()
        payload = inflate.decompress(data, 1 << 20)
        copy, colon, line = payload.partition(b":")
        if not (colon and copy.isdigit() and line and inflate.eof) or inflate.unconsumed_tail:
            raise ValueError
        return line, int(copy)
    except (ValueError, zlib.error):
        raise BadParameter("resumeKey", f"not a resume key of this server: {key[:60]!r}") from None


def process(lines, filters=(), from_ts=None, to_ts=None, limit=None, output="cdxj"):
    """Yield the output lines (bytes, ``\\n``-terminated) for ``lines`` (bytes), applying
    filters, then the ``from``/``to`` range, then ``limit``, in pywb's order."""
    if output not in OUTPUTS:
        raise ValueError(f"unknown output {output!r}: expected one of {', '.join(OUTPUTS)}")
    predicates = [f if callable(f) else parse_filter(f) for f in filters]
    check_timestamp(from_ts, "from")
    check_timestamp(to_ts, "to")
    if limit is not None and limit <= 0:
        return
    captures = selected(map(Capture, lines), predicates, from_ts, to_ts)
    write = formatter(output)
    out = (write(c) for c, _ in zip(captures, range(limit) if limit is not None else iter(int, 1)))
    yield from timemap(out) if output == "link" else out
