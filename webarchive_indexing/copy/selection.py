"""What a copy selects: domains, host names and URL prefixes as SURT key ranges, merged
so that each record is selected once; and ``check``, what a selection takes, from the
index alone.

A bare name (``example.com``) or ``*.example.com`` is the domain and every subdomain
(``www.example.com``, ``a.b.example.com``; not ``examples.com``); anything with a ``/``
or ending in ``*`` (``example.com/path``, ``http://example.com/a*``,
``www.example.com/*``) is a URL prefix, the ``*`` stripped. Keys are SURT keys, as in
pywb and Common Crawl's index: ``http``/``https``, ``www.`` and default ports make no
difference.
"""
import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..cdx import cdxline
from .. import storage
from ..zipnum.reader import search_range


class SelectionError(ValueError):
    """A selection input that is not a domain, host name or URL prefix."""


@dataclass(frozen=True)
class Input:
    text: str     # as given
    kind: str     # "domain" or "prefix"
    ranges: tuple  # SURT key ranges (start, end), end exclusive

    def covers(self, line):
        """Whether the index line ``line`` (bytes) is selected by this input."""
        return any(start.encode() <= line < end.encode() for start, end in self.ranges)


def parse_input(text):
    """One selection input -> ``Input``; raises ``SelectionError`` saying what is accepted."""
    text = text.strip()
    hint = ("give a domain (example.com or *.example.com: it and every subdomain) or a URL "
            "prefix (example.com/path, http://example.com/a*)")
    if not text:
        raise SelectionError(f"empty selection input: {hint}")
    if any(c.isspace() for c in text):
        raise SelectionError(f"{text!r} contains white space: {hint}")
    if text.startswith("*."):
        name = text[2:]
        if "/" in name or "*" in name or not name.strip("."):
            raise SelectionError(f"{text!r}: *. takes a host name (*.example.com); {hint}")
        kind, url, match = "domain", name, "domain"
    elif "/" in text or text.endswith("*"):
        url = text.removesuffix("*")
        if "*" in url:
            raise SelectionError(f"{text!r}: a * may only end a URL prefix or start *.domain")
        kind, match = "prefix", "prefix"
    else:
        if "*" in text:
            raise SelectionError(f"{text!r}: a * may only end a URL prefix or start *.domain")
        kind, url, match = "domain", text, "domain"
    if match == "domain" and _is_ip(url):
        match = "host"  # an IP address has no subdomains (and no SURT host commas)
    if "://" not in url:
        # else surt takes 'example.com' in 'example.com:8080' for a scheme
        url = "http:" + url if url.startswith("//") else "http://" + url
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an IPv6 address without its closing ']'
        raise SelectionError(f"{text!r}: {exc}; {hint}") from None
    if not parts.hostname or not parts.hostname.strip("."):
        raise SelectionError(f"{text!r} names no host, so it would select nothing: {hint} (to "
                             "copy all of a collection, copy its WARC files)")
    try:
        parts.port
    except ValueError:  # urllib's words ("could not be cast to integer") say less
        raise SelectionError(f"{text!r}: what follows ':' must be a port, a number from 0 to "
                             f"65535 (example.com:8080); {hint}") from None
    try:
        start, end = search_range(url, match)
    except ValueError as exc:
        raise SelectionError(f"{text!r}: {exc}") from None
    ranges = [(start, end)]
    if kind == "domain" and ":" not in start.split(")", 1)[0]:
        # the host itself on other ports (com,example:8080)/...: ':' sorts after the '-'
        # that ends the domain's range), which a CDX server's domain query leaves out;
        # subdomains on other ports (com,example,www:8080)/) are in the range already
        host = start.split(")", 1)[0].rstrip(",")
        ranges.append((host + ":", host + ";"))
    return Input(text, kind, tuple(ranges))


def _is_ip(name):
    try:
        ipaddress.ip_address(name.split(":")[0] if name.count(":") == 1 else name.strip("[]"))
    except ValueError:
        return False
    return True


def parse_selection(items):
    """The ``Input`` of each text of ``items``, in order; blanks and duplicates dropped."""
    inputs, seen = [], set()
    for item in items:
        if not item.strip() or item.strip() in seen:
            continue
        seen.add(item.strip())
        inputs.append(parse_input(item))
    return inputs


def split_list(text):
    """The inputs of a ``--domains`` value: comma-separated."""
    return [part.strip() for part in text.split(",") if part.strip()]


def read_selection_file(path):
    """The inputs listed in a file (local or ``s3://``): one a line, ``#`` starts a comment."""
    try:
        data = storage.read_bytes(path)
    except FileNotFoundError:
        raise SelectionError(f"no such selection file: {path}") from None
    items = []
    for line in data.decode("utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            items.append(line)
    return items


@dataclass
class Group:
    """A merged key range and the inputs (their indices) whose ranges it covers."""
    start: str
    end: str
    members: list


def merge_ranges(inputs):
    """The key ranges of ``inputs`` merged into sorted, disjoint ``Group``s: every index
    line falls in at most one, so each record is selected once."""
    ranges = sorted((start, end, i) for i, item in enumerate(inputs) for start, end in item.ranges)
    groups = []
    for start, end, i in ranges:
        if groups and start <= groups[-1].end:
            groups[-1].end = max(groups[-1].end, end)
            if i not in groups[-1].members:
                groups[-1].members.append(i)
        else:
            groups.append(Group(start, end, [i]))
    return groups


def check_source(location, domains, domains_files, records_csv):
    """``SelectionError`` unless the records come from one place: a cluster (``location``,
    with a selection), or a records CSV alone."""
    if records_csv and (location or domains or domains_files):
        raise SelectionError("--records-csv names the records itself: give no CLUSTER, "
                             "--domains or --domains-file with it")
    if not records_csv and not location:
        raise SelectionError("no records to copy: give a CLUSTER with --domains or "
                             "--domains-file, or --records-csv FILE")


def read_selection(domains, domains_files):
    """The ``Input`` of each domain, host or URL prefix of ``domains`` (``--domains`` values,
    comma-separated lists) and of ``domains_files``; ``SelectionError`` if there is none."""
    items = []
    for value in domains:
        items += split_list(value)
    for path in domains_files:
        items += read_selection_file(path)
    if not items:
        raise SelectionError("nothing selected: give --domains example.com,example.org "
                             "or --domains-file FILE (one domain, host or URL prefix a line)")
    return parse_selection(items)


def lines_in(cluster, groups):
    """``(group, line)`` for every index line in ``groups``, in index order."""
    for group in groups:
        for line in cluster.lookup_range(group.start.encode(), group.end.encode()):
            yield group, line


# Archives whose records a copy leaves out: it writes WARC files, and an ARC record is none
ARC_FILES = (".arc", ".arc.gz")


def is_arc(record):
    """Whether the ``cdxline.Location`` ``record`` is in an ARC file (a copy leaves it out)."""
    return record.filename.endswith(ARC_FILES)


@dataclass
class Tally:
    captures: int = 0
    bytes: int = 0
    files: set = field(default_factory=set)
    arc_captures: int = 0  # left out

    def add(self, record):
        if is_arc(record):
            self.arc_captures += 1
            return
        self.captures += 1
        self.bytes += record.length
        self.files.add(record.filename)

    @property
    def warc_files(self):
        return len(self.files)

    def as_dict(self):
        return {"captures": self.captures, "warc_files": self.warc_files, "bytes": self.bytes,
                "arc_captures": self.arc_captures}


def check(cluster, inputs):
    """``(per input, total)`` ``Tally``s: what a copy would take, from the index alone,
    and the captures in ARC files it leaves out.

    One pass over the merged ranges; an input's numbers count what it selects (inputs
    may overlap), the total counts each record once.
    """
    per_input = [Tally() for _ in inputs]
    total = Tally()
    for group, line in lines_in(cluster, merge_ranges(inputs)):
        record = cdxline.location(line)
        total.add(record)
        for i in group.members:
            if inputs[i].covers(line):
                per_input[i].add(record)
    return per_input, total
