"""What the CDX server API does with the lines a lookup found, as pywb does it:
``filter``, ``from``/``to``, ``limit``, and the output formats.

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
import json
import re

from warcio.timeutils import PAD_14_DOWN, PAD_14_UP, pad_timestamp

from .cdxline import ALIASES, NAMES, fields_of

__all__ = ["OUTPUTS", "parse_filter", "check_timestamp", "process", "fields_of"]

OUTPUTS = ("cdxj", "json", "cdx11")

# The fields of the cdx11 output
CDX11_FIELDS = NAMES["cdx11"]


class _Filter:
    def __init__(self, spec):
        text = spec
        self.invert = text.startswith("!")
        text = text[self.invert:]
        self.mode = text[0] if text[:1] in ("=", "~") else "contains"
        text = text[self.mode != "contains":]
        field, colon, value = text.partition(":")
        self.field, self.value = (ALIASES.get(field, field), value) if colon else ("", text)
        if self.mode == "~":
            try:
                self.regex = re.compile(self.value)
            except re.error as exc:
                raise ValueError(f"bad regular expression in filter {spec!r}: {exc}") from None

    def __call__(self, line, fields):
        value = line.rstrip().decode("utf-8") if not self.field else str(fields.get(self.field, ""))
        if self.mode == "=":
            matched = value == self.value
        elif self.mode == "~":
            matched = self.regex.match(value) is not None
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
    if text is not None and not re.fullmatch(r"\d{1,14}", text):
        raise ValueError(f"{name} must be a timestamp of 1 to 14 digits (yyyyMMddhhmmss, "
                         f"e.g. 2024 or 20240131), got {text!r}")
    return text


def process(lines, filters=(), from_ts=None, to_ts=None, limit=None, output="cdxj"):
    """Yield the output lines (bytes, ``\\n``-terminated) for ``lines`` (bytes), applying
    filters, then the ``from``/``to`` range (inclusive, padded to 14 digits as pywb
    pads them), then ``limit``, in pywb's order."""
    if output not in OUTPUTS:
        raise ValueError(f"unknown output {output!r}: expected one of {', '.join(OUTPUTS)}")
    predicates = [f if callable(f) else parse_filter(f) for f in filters]
    low = pad_timestamp(check_timestamp(from_ts, "from"), PAD_14_DOWN) if from_ts else None
    high = pad_timestamp(check_timestamp(to_ts, "to"), PAD_14_UP) if to_ts else None
    if limit is not None and limit <= 0:
        return
    count = 0
    for line in lines:
        parts = line.split(b" ", 2)
        is_cdxj = len(parts) == 3 and parts[2][:1] == b"{"
        needs_fields = predicates or output != "cdxj" or not is_cdxj
        fields = fields_of(line) if needs_fields else None
        if not all(p(line, fields) for p in predicates):
            continue
        if low or high:
            timestamp = fields["timestamp"] if fields else parts[1].decode()
            if (low and timestamp < low) or (high and timestamp > high):
                continue
        yield _format(line, fields, output, is_cdxj)
        count += 1
        if count == limit:
            return


def _format(line, fields, output, is_cdxj):
    if output == "json":
        return (json.dumps(fields) + "\n").encode("utf-8")
    if output == "cdx11":
        return (" ".join(str(fields.get(name, "-")) for name in CDX11_FIELDS) + "\n").encode("utf-8")
    if is_cdxj:
        return line.rstrip() + b"\n"
    rest = {name: value for name, value in fields.items() if name not in ("urlkey", "timestamp")}
    return f"{fields['urlkey']} {fields['timestamp']} {json.dumps(rest)}\n".encode("utf-8")
