"""Which lines of an index input are well-formed, and of which format: the one definition
(``inputs.indexes`` reads every index input through it).

A line is malformed when it is not UTF-8, has no URL key or one holding white space (the
jobs' readers would drop it), a timestamp that is not digits, too few or too many fields
for its format, a carriage return inside (Hadoop's line reader would end the line there),
or (CDXJ) a JSON block that is not one JSON object with an ``offset`` and a ``length``
that are whole numbers (``copy``, ``query --output json`` and the columnar table need
them; two lines run together are not one object). A chunk of well-formed ASCII lines is
checked with one regular expression match (``all_well_formed``; for CDXJ, a grammar of
flat JSON objects, or its compiled twin ``_linecheck.cdxj_well_formed`` where it is
built); a line it does not take is asked ``line_problem``.
"""
import json
import re

from ..cdx.cdxfile import BOM
from ..cdx.cdxline import FORMATS, LEGENDS, is_cdx_line

# The classic formats a cluster is built of, and their legends
CLASSIC = {fmt: LEGENDS[fmt] for fmt in FORMATS if fmt in LEGENDS}
# Field count -> format of a CDX line that is not CDXJ
FIELD_COUNTS = {len(legend.split()): fmt for fmt, legend in CLASSIC.items()}
LEGEND_FORMATS = {legend: fmt for fmt, legend in CLASSIC.items()}
# A URL key and a timestamp: the key holds no white space as ``cdxline.is_cdx_line`` sees
# it in ASCII (str's \s holds \x1c-\x1f too; a non-ASCII line is asked ``is_cdx_line``)
_HEAD = rb"[^\s\x1c-\x1f]++ [0-9]++"
# A flat JSON object (string keys; string, number, true, false or null values) that has
# an "offset" and a "length" of digits, in either order, as a CDXJ line's JSON block must
# be. Strings are matched as runs of plain characters between escapes, and runs are
# possessive: so a chunk costs about 3 times what looking for the closing brace alone
# did (bench/read_indexes.py: 2.5 us a line, not 0.8), less than parsing each line's JSON
# (measured 7-8 times). A line it refuses is asked ``_json_problem`` (nested values, say), the judge: the
# grammar takes nothing that refuses
_STRING = rb'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
_VALUE = (rb"(?:" + _STRING + rb"|-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+"
          rb"|true|false|null)")
_WS = rb"[ \t]*+"
_MEMBER = _STRING + _WS + b":" + _WS + _VALUE + _WS
_NEXT = b"," + _WS + _MEMBER
_OFFSET, _LENGTH = (b'"' + name + b'"' + _WS + b":" + _WS + rb'(?:"[0-9]++"|0|[1-9][0-9]*+)' + _WS
                    for name in (b"offset", b"length"))
_JSON = (rb"\{" + _WS + rb"(?:" + _MEMBER + b"," + _WS + rb")*?(?:"
         + _OFFSET + rb"(?:" + _NEXT + rb")*?," + _WS + _LENGTH + b"|"
         + _LENGTH + rb"(?:" + _NEXT + rb")*?," + _WS + _OFFSET + rb")(?:" + _NEXT + rb")*+\}")
# The rest of a well-formed line of each format after its key and timestamp (possessive:
# nothing is tried again, which saves a tenth of the time of a chunk)
_REST = {"cdxj": b" " + _JSON,
         **{fmt: rb"(?: [^ \n]*+){%d}" % (len(legend.split()) - 2) for fmt, legend in CLASSIC.items()}}
# One well-formed line (no newline), and a whole chunk of them, each ending in \n
WELL_FORMED = {fmt: re.compile(_HEAD + rest + rb"\Z") for fmt, rest in _REST.items()}
ALL_WELL_FORMED = {fmt: re.compile(rb"(?:" + _HEAD + rest + rb"\n)*+") for fmt, rest in _REST.items()}
# Whether a whole chunk is well-formed lines, by format: the expression's fullmatch, or for
# CDXJ its compiled twin (the same answers, about 20 times faster: the repeats of the JSON
# grammar cost the expression more than all the rest of a build does with a line)
ALL_WELL_FORMED_MATCH = {fmt: pattern.fullmatch for fmt, pattern in ALL_WELL_FORMED.items()}
try:
    from ._linecheck import cdxj_well_formed
    ALL_WELL_FORMED_MATCH["cdxj"] = cdxj_well_formed
except ImportError:  # not built (a pure install): the expression decides
    cdxj_well_formed = None
LINE_HEAD = re.compile(_HEAD + b" ")
HEADER = re.compile(rb" ?CDX ([^\r\n]*?)\s*\Z")
# What a second line's start looks like where a line end was lost after a JSON block
_RUN_TOGETHER = re.compile(rb"\}[^\s\x1c-\x1f{}\"]++ [0-9]++ \{")


def line_format(line):
    """"cdxj", "cdx11" or "cdx9" for one CDX line (bytes, no newline); None if it is none."""
    parts = line.split(b" ", 2)
    if len(parts) < 3 or not parts[0] or not parts[1].isdigit():
        return None
    if parts[2].startswith(b"{"):
        return "cdxj"
    return FIELD_COUNTS.get(line.count(b" ") + 1)


def header_format(line):
    """The format a `` CDX ...`` header line declares; None if ``line`` is no header;
    ValueError for a legend of another format."""
    match = HEADER.match(line)
    if not match:
        return None
    legend = match.group(1).decode("utf-8", "replace")
    if legend not in LEGEND_FORMATS:
        known = "; ".join(f"{fmt}: {legend}" for fmt, legend in CLASSIC.items())
        raise ValueError(f"its CDX legend {legend!r} is not one of the formats a cluster is "
                         f"built of ({known}): convert it to one of them with the tool "
                         "that wrote it (build --cdx-format converts between these three only)")
    return LEGEND_FORMATS[legend]


def looks_like_cdx(head):
    """Whether ``head`` (the first bytes of a file, inflated) starts with a CDX line or header."""
    first = head.split(b"\n", 1)[0].rstrip(b"\r").removeprefix(BOM)
    try:
        return header_format(first) is not None or line_format(first) is not None
    except ValueError:
        return True  # a CDX header of a legend we do not build: say so when it is opened


def _utf8(data):
    """``data`` as text, or None if it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def line_problem(fmt, line):
    """Why ``line`` (trailing ``\\r`` dropped) is not a well-formed line of format ``fmt``;
    None if it is one."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    if b"\r" in line:
        return "a carriage return (CR) inside the line: Hadoop's line reader would end it there"
    if WELL_FORMED[fmt].match(line) is not None and (line.isascii() or is_cdx_line(text)):
        return None
    json_problem = None
    if fmt == "cdxj":
        parts = line.split(b" ", 2)
        if len(parts) < 3:
            return "expected 'urlkey timestamp {json}'"
        if not (parts[2].startswith(b"{") and parts[2].endswith(b"}")):
            return "its JSON block does not start with '{' and end with '}' (cut short?)"
        json_problem = _json_problem(text.split(" ", 2)[2])
    else:
        parts = line.split(b" ")
        wanted = len(CLASSIC[fmt].split())
        if len(parts) != wanted:
            return f"{len(parts)} fields, not the {wanted} of {fmt} ({CLASSIC[fmt]})"
    if not parts[0]:
        return "no URL key"
    if not parts[1].isdigit():
        return f"timestamp {parts[1][:40].decode('utf-8', 'replace')!r} is not digits"
    if LINE_HEAD.match(line) is None or not is_cdx_line(text):
        return "white space in its URL key"
    return json_problem


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _json_problem(block):
    """Why the JSON block of a CDXJ line (text) is not an object with an offset and a
    length that are whole numbers; None if it is one."""
    try:
        record = json.loads(block, parse_constant=_no_constant)
    except ValueError as exc:
        if _RUN_TOGETHER.search(block.encode("utf-8")):
            return "two lines run together (a line end lost?): its JSON block holds another line"
        return f"its JSON block is not valid JSON: {exc}"
    for name in ("offset", "length"):
        value = record.get(name)
        if value is None:
            return f"its JSON has no {name!r} (copy and query need where the record is)"
        if not (type(value) is int and value >= 0
                or type(value) is str and value.isascii() and value.isdigit()):
            return f"its {name} {str(value)[:40]!r} is not a whole number"
    return None


def all_well_formed(fmt, data, lines):
    """Whether every one of ``lines`` (``data``, UTF-8 bytes split at ``\\n``) is a
    well-formed line of format ``fmt``: one regular expression on a chunk of ASCII lines."""
    return not (b"\r" in data or not ALL_WELL_FORMED_MATCH[fmt](data)
                or not (data.isascii() or _utf8(data) is not None and _is_cdx_line_all(lines)))


def _is_cdx_line_all(lines):
    """Whether every one of ``lines`` (UTF-8 bytes) is a line the jobs' readers keep."""
    return all(is_cdx_line(line.decode("utf-8")) for line in lines)
