"""Access rules as data: pywb's ``.aclj`` rules read as they are, with OutbackCDX's
criteria (``Rule``, ``parse_rules``, ``read_rules``), the rule that wins for a capture
(``Rules.decide``: the longest matching prefix, each key's chain of prefixes), a
collection-wide ``Embargo``, and the rules of one request (``Checker``: a line's access).
What the rules mean is said in ``access.py``'s docstring; ``access.py`` follows the files
and applies them where captures leave the tool.
"""
import bisect
import calendar
import datetime
import functools
import json
import os
import re
import time

from warcio.timeutils import PAD_14_DOWN, PAD_14_UP, pad_timestamp

from .. import storage
from ..cdx.urlkey import url_key


ACCESS = ("allow", "block", "exclude", "allow_ignore_embargo")
EMBARGO_ACCESS = ("exclude", "block")
# an exact URL's rule: its key and this; and the rule of every URL (pywb's)
EXACT = "###"
ANY = "*,"
# what a period is made of, as pywb and OutbackCDX name them
PERIOD_UNITS = {"y": "years", "m": "months", "w": "weeks", "d": "days"}
PERIOD = re.compile(r"(?:([0-9]+)([ymwd]))+$")
# pywb's date fields of a rule, in the order it looks at them (the first present counts)
PYWB_DATES = ("before", "after", "newer", "older")
# a rule file read remotely is looked at again after so many seconds
REMOTE_RECHECK = 5
SURT_LIKE = re.compile(r"([^:./]+[,)])+")


class RuleError(ValueError):
    """A rule (or rule file) that cannot be read as one: the message names the file and line."""


def parse_period(value, where="period"):
    """A period as ``{"years": Y, "months": M, "weeks": W, "days": D}``, from that dict
    (pywb's, OutbackCDX's) or text (``10y``, ``6m``, ``1y6m``, ``2w``, ``30d``)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if not PERIOD.match(text):
            raise ValueError(f"{where}: expected a period such as 10y, 6m, 1y6m, 2w or 30d, got {value!r}")
        period = {}
        for number, unit in re.findall(r"([0-9]+)([ymwd])", text):
            name = PERIOD_UNITS[unit]
            period[name] = period.get(name, 0) + int(number)
        return period
    if not isinstance(value, dict) or not value or any(
            k not in PERIOD_UNITS.values() or not isinstance(v, int) or isinstance(v, bool) or v < 0
            for k, v in value.items()):
        raise ValueError(f"{where}: expected {{\"years\": Y, \"months\": M, \"weeks\": W, \"days\": D}} "
                         f"(whole numbers, any of them), got {json.dumps(value)}")
    return dict(value)


def _ago(now, period):
    """The 14-digit UTC timestamp ``period`` before ``now`` (seconds since the epoch),
    months counted as calendars count them (31 March less a month is 28 or 29 February)."""
    moment = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
    months = moment.year * 12 + moment.month - 1 - period.get("years", 0) * 12 - period.get("months", 0)
    year, month = divmod(months, 12)
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    moment = moment.replace(year=year, month=month + 1, day=day)
    moment -= datetime.timedelta(weeks=period.get("weeks", 0), days=period.get("days", 0))
    return moment.strftime("%Y%m%d%H%M%S")


def _timestamp(value, pad, where):
    """A 14-digit UTC timestamp of ``value``: timestamp digits (padded with ``pad``) or
    an ISO 8601 date (OutbackCDX's ``2015-08-01T01:00:00+1000``)."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{4,14}", value):
        return pad_timestamp(value, pad)
    try:
        moment = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{where}: expected a timestamp (yyyyMMddhhmmss, 4 to 14 digits) or an "
                         f"ISO 8601 date (2015-08-01T01:00:00+10:00), got {value!r}") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc)
    return moment.strftime("%Y%m%d%H%M%S")


def rule_key(url_or_surt, exact=False):
    """The KEY of a rule for a URL, a URL prefix (``example.com/path*``), a domain
    (``*.example.com``: two keys, the host and its subdomains), or a SURT prefix (taken as
    it is, as ``wb-manager acl`` takes it); OpenWayback's ``http://(com,example,)/`` SURT
    prefixes are made ours. A list of keys."""
    text = url_or_surt.strip()
    if not text:
        raise ValueError("an empty URL or SURT prefix")
    if text.startswith(("http://(", "https://(", "(")):
        surt = text.split("(", 1)[1]
        keys = [surt.replace(",)", ")", 1)]
    elif text.startswith("*."):
        if "/" in text or exact:
            raise ValueError(f"{text!r}: a domain (*.example.com) has no path and is not exact")
        host = url_key(text[2:] + "/").split(")", 1)[0]
        keys = [host + ")", host + ","]
    elif SURT_LIKE.match(text) and "://" not in text and (")" in text or text.endswith(",")):
        keys = [text]
    elif text == ANY:
        keys = [ANY]
    else:
        keys = [url_key(text[:-1] if text.endswith("*") and not exact else text)]
    return [key + EXACT if exact else key for key in keys]


class Rule:
    """One rule: its KEY, its JSON fields as written (kept whole, in their order), and
    where it was read (``file:line``)."""

    __slots__ = ("key", "fields", "where", "access", "user", "criteria", "dated", "text")

    def __init__(self, key, fields, where="", text=None):
        # ``text``: the line as a file holds it, kept as it is (its JSON's spacing too)
        self.key, self.fields, self.where, self.text = key, fields, where, text
        if not key or " " in key:
            raise RuleError(f"{where}: a rule's key is a SURT prefix without spaces, got {key!r}")
        access = fields.get("access")
        if access not in ACCESS:
            raise RuleError(f"{where}: \"access\" must be one of {', '.join(ACCESS)}, got "
                            f"{json.dumps(access)}")
        user = fields.get("user")
        if user is not None and (not isinstance(user, str) or not user):
            raise RuleError(f"{where}: \"user\" must be a name, got {json.dumps(user)}")
        self.access, self.user = access, user
        try:
            self.dated = self._pywb_date(fields)
            self.criteria = self._criteria(fields)
        except ValueError as exc:
            raise RuleError(f"{where}: {exc}") from None

    @staticmethod
    def _pywb_date(fields):
        for name in PYWB_DATES:
            value = fields.get(name)
            if value:
                if name in ("before", "after"):
                    return name, _timestamp(str(value), PAD_14_UP, f'"{name}"')
                return name, parse_period(value, f'"{name}"')
        return None

    @staticmethod
    def _criteria(fields):
        criteria = {}
        for name in ("captured", "accessed"):
            value = fields.get(name)
            if value is None:
                continue
            if not isinstance(value, dict) or set(value) - {"start", "end"}:
                raise ValueError(f'"{name}": expected {{"start": DATE, "end": DATE}} (either may be '
                                 f"null), got {json.dumps(value)}")
            start, end = value.get("start"), value.get("end")
            criteria[name] = (start and _timestamp(start, PAD_14_DOWN, f'"{name}" start'),
                              end and _timestamp(end, PAD_14_UP, f'"{name}" end'))
        if fields.get("period") is not None:
            criteria["period"] = parse_period(fields["period"], '"period"')
        return criteria

    @classmethod
    def parse(cls, line, where=""):
        """The rule of a line ``KEY - JSON`` of an ``.aclj`` file."""
        key, space, rest = line.partition(" ")
        stamp, space2, text = rest.partition(" ")
        if not (space and space2 and stamp == "-" and text.startswith("{")):
            raise RuleError(f"{where}: expected KEY - {{\"access\": ...}} (pywb's .aclj line), got "
                            f"{line[:80]!r}")
        try:
            fields = json.loads(text)
        except ValueError as exc:
            raise RuleError(f"{where}: the JSON of the rule is malformed: {exc}") from None
        if not isinstance(fields, dict):
            raise RuleError(f"{where}: the JSON of a rule is an object, got {text[:60]!r}")
        return cls(key, fields, where, line)

    def line(self):
        """The rule as an ``.aclj`` line (without its newline): as read, or as pywb writes it."""
        return self.text or f"{self.key} - {json.dumps(self.fields)}"

    def applies(self, timestamp, now_ts, ago):
        """Whether OutbackCDX's criteria hold for a capture at ``timestamp``, accessed at
        ``now_ts`` (``ago(period)``: the timestamp a period before now)."""
        captured = self.criteria.get("captured")
        if captured and not ((not captured[0] or timestamp >= captured[0])
                             and (not captured[1] or timestamp <= captured[1])):
            return False
        accessed = self.criteria.get("accessed")
        if accessed and not ((not accessed[0] or now_ts >= accessed[0])
                             and (not accessed[1] or now_ts <= accessed[1])):
            return False
        period = self.criteria.get("period")
        return not period or timestamp > ago(period)

    def date_holds(self, timestamp, ago):
        """pywb's date field: whether it holds (None: the rule has none)."""
        if self.dated is None:
            return None
        name, value = self.dated
        if name == "before":
            return timestamp < value
        if name == "after":
            return timestamp > value
        bound = ago(value)
        return timestamp > bound if name == "newer" else timestamp < bound

    def describe(self):
        return f"{self.line()}  ({self.where})" if self.where else self.line()


def parse_rules(text, name):
    """The rules of an ``.aclj`` file's text (``name`` in messages); blank lines are none.
    RuleError naming the first bad line."""
    rules = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            rules.append(Rule.parse(line.rstrip("\r"), f"{name}:{number}"))
    return rules


def read_rules(path):
    """The rules of the ``.aclj`` file (or of every ``.aclj`` file of the directory) at
    ``path``; RuleError for a file that cannot be read or a bad line, naming it."""
    paths = [path]
    if storage.is_local(path) and os.path.isdir(path):
        paths = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".aclj"))
    rules = []
    for each in paths:
        try:
            data = storage.read_bytes(each)
        except OSError as exc:
            raise RuleError(f"{each}: cannot read the access rules: {exc.strerror or exc}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[:exc.start].count(b"\n") + 1
            raise RuleError(f"{each}:{line}: not UTF-8 text (byte {exc.start}): is it an .aclj file?") from None
        rules.extend(parse_rules(text, each))
    return rules


class Embargo:
    """A collection-wide embargo, as pywb's ``embargo`` setting: captures ``before:TS``,
    ``after:TS``, ``newer:PERIOD`` (younger than it) or ``older:PERIOD`` are given
    ``access`` (exclude, as pywb, or block); several conditions: any of them."""

    def __init__(self, specs=(), access="exclude"):
        if access not in EMBARGO_ACCESS:
            raise ValueError(f"embargo access: expected {' or '.join(EMBARGO_ACCESS)}, got {access!r}")
        self.access, self.conditions, self.specs = access, [], list(specs)
        for spec in self.specs:
            kind, colon, value = spec.partition(":")
            if kind in ("before", "after") and colon:
                self.conditions.append((kind, _timestamp(value, PAD_14_UP, f"embargo {spec!r}")))
            elif kind in ("newer", "older") and colon:
                self.conditions.append((kind, parse_period(value, f"embargo {spec!r}")))
            else:
                raise ValueError(f"embargo {spec!r}: expected before:TIMESTAMP, after:TIMESTAMP, "
                                 "newer:PERIOD or older:PERIOD (PERIOD as 10y, 6m, 1y6m, 30d)")

    @classmethod
    def from_pywb(cls, config):
        """From pywb's ``embargo`` setting (a dict)."""
        specs = []
        for kind in PYWB_DATES:
            value = config.get(kind)
            if value:
                specs.append(f"{kind}:{value}" if kind in ("before", "after") else
                             f"{kind}:" + "".join(f"{value.get(n, 0)}{u}" for u, n in PERIOD_UNITS.items()))
        return cls(specs, config.get("access", "exclude"))

    def bounds(self, ago):
        """``[(kind, timestamp)]`` of now: a capture is embargoed if it is ``before`` or
        ``after`` one of them."""
        out = []
        for kind, value in self.conditions:
            if kind in ("before", "after"):
                out.append((kind, value))
            else:  # newer than a period: after now less it; older: before it
                out.append(("after" if kind == "newer" else "before", ago(value)))
        return out

    def __bool__(self):
        return bool(self.conditions)


class Rules:
    """Rules merged from any number of files, indexed for the longest-prefix match."""

    def __init__(self, rules=(), default="allow"):
        if default not in ACCESS[:3]:
            raise ValueError(f"default access: expected allow, block or exclude, got {default!r}")
        self.default = default
        self.rules = list(rules)
        # each KEY's rules in the order pywb meets them (its files sorted in reverse)
        ordered = sorted(self.rules, key=lambda r: r.line(), reverse=True)
        self.by_key, self.exact = {}, {}
        for rule in ordered:
            if rule.key.endswith(EXACT):
                self.exact.setdefault(rule.key[:-len(EXACT)], []).append(rule)
            else:
                self.by_key.setdefault(rule.key, []).append(rule)
        self.any = self.by_key.pop(ANY, [])
        self.keys = sorted(self.by_key)
        # whether a capture's access depends on its URL alone (not on dates)
        self.timeless = not any(rule.criteria or rule.dated for rule in self.rules)
        # each KEY's groups and those of the KEYs that are prefixes of it, longest first
        self.chains, stack = {}, []
        for key in self.keys:
            while stack and not key.startswith(stack[-1]):
                stack.pop()
            self.chains[key] = (self.by_key[key], *(self.chains[stack[-1]] if stack else ()))
            stack.append(key)

    def __len__(self):
        return len(self.rules)

    def groups(self, key):
        """The rules that may hold for URL key ``key`` (a str), a list per KEY, the longest
        KEY first: the exact URL's, those of each prefix, ``*,``'s."""
        groups = [self.exact[key]] if key in self.exact else []
        i = bisect.bisect_right(self.keys, key) - 1
        if i >= 0:
            # the KEY before it in order, or one of that KEY's prefixes, is the longest
            # prefix of it there is (a KEY between a prefix of it and it starts with it)
            chain = self.chains[self.keys[i]]
            for n, group in enumerate(chain):
                if key.startswith(group[0].key):
                    groups.extend(chain[n:])
                    break
        if self.any:
            groups.append(self.any)
        return groups

    def decide(self, key, timestamp, user=None, now=None, embargo=None, explain=None):
        """``(access, rule)`` for a capture of URL key ``key`` at ``timestamp``, asked by
        ``user`` at ``now`` (seconds since the epoch; default: now); ``rule`` None for the
        default. ``explain``: a list that gets a line on each rule looked at."""
        return Checker(self, user, now, embargo).decide(key, timestamp, explain)


class Checker:
    """The access of captures for one request: ``user``, at one moment (``now``)."""

    def __init__(self, rules, user=None, now=None, embargo=None):
        self.rules, self.user = rules, user
        self._now = time.time() if now is None else now
        self._ago_cache = {}
        self.embargo = embargo.bounds(self.ago) if embargo else []
        self.embargo_access = embargo.access if embargo else None
        self._last_key, self._last_groups = None, None
        # the last line's key, and its access where that depends on nothing else
        self._line_key, self._line_access = None, None
        self._timeless = rules.timeless and not self.embargo
        # counts of what this request left out and marked
        self.excluded = self.blocked = 0

    @functools.cached_property
    def now_ts(self):
        return time.strftime("%Y%m%d%H%M%S", time.gmtime(self._now))

    def ago(self, period):
        key = tuple(sorted(period.items()))
        if key not in self._ago_cache:
            self._ago_cache[key] = _ago(self._now, period)
        return self._ago_cache[key]

    def _groups(self, key):
        if key != self._last_key:
            self._last_key, self._last_groups = key, self.rules.groups(key)
        return self._last_groups

    def decide(self, key, timestamp, explain=None):
        if len(timestamp) != 14:
            timestamp = pad_timestamp(timestamp, PAD_14_UP)  # as pywb reads a short one
        groups = self.rules.groups(key) if explain is not None else self._groups(key)
        chosen = None
        for group in groups:
            fallback = None
            for rule in group:
                if rule.criteria and not rule.applies(timestamp, self.now_ts, self.ago):
                    if explain is not None:
                        explain.append(f"not applying (its captured/accessed/period criteria do not "
                                       f"hold): {rule.describe()}")
                    continue
                if rule.user == self.user:  # pywb: a request without a user takes the first
                    chosen = rule           # rule for everyone, one with a user the last
                    break
                if rule.user is None:
                    fallback = rule
                elif explain is not None:
                    explain.append(f"for user {rule.user!r}, not this request's: {rule.describe()}")
            chosen = chosen or fallback
            if chosen:
                break
        access = chosen.access if chosen else self.rules.default
        if explain is not None:
            explain.append(f"the longest key that matches {key}" + (f" (user {self.user})" if self.user else "")
                           + f": {chosen.describe()}" if chosen else
                           f"no rule matches {key}: the default access ({self.rules.default})")
        if chosen is not None and chosen.date_holds(timestamp, self.ago) is False:
            if explain is not None:
                explain.append(f"its {chosen.dated[0]} date does not hold for {timestamp}: the default "
                               f"access ({self.rules.default}), as pywb")
            access = self.rules.default
        if access not in ("allow_ignore_embargo", "exclude") and self.embargo:
            for kind, bound in self.embargo:
                if timestamp < bound if kind == "before" else timestamp > bound:
                    if explain is not None:
                        explain.append(f"embargoed ({kind} {bound}): {self.embargo_access}")
                    access = self.embargo_access
                    break
        if access == "allow_ignore_embargo":
            access = "allow"
        return access, chosen

    def __call__(self, line):
        """The access of a CDX line (bytes): None if excluded, else "allow" or "block"."""
        line_key = line[:line.find(b" ")]
        if line_key == self._line_key and self._line_access is not None:
            access = self._line_access  # the captures of one URL come together
        else:
            parts = line.split(b" ", 2)
            key = parts[0].decode("utf-8", "replace")
            if "__wb_method=" in key and len(parts) == 3:
                # pywb looks a POST capture up by its URL's key, without the method's
                url = _original(parts[2])
                key = url_key(url) if url else key
            access = self.decide(key, parts[1].decode("ascii", "replace") if len(parts) > 1 else "")[0]
            self._line_key, self._line_access = line_key, access if self._timeless else None
        if access == "exclude":
            self.excluded += 1
            return None
        if access == "block":
            self.blocked += 1
        return access


def _original(rest):
    if rest[:1] == b"{":
        try:
            return json.loads(rest).get("url")
        except ValueError:
            return None
    fields = rest.split(b" ")
    return fields[0].decode("utf-8", "replace") if fields else None
