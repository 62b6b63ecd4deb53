"""Access control: which captures a request may see, by rules kept apart from the cluster
(which is never rewritten to hide something).

Rules are pywb's ``.aclj`` files read as they are: one rule a line, ``KEY - JSON``, KEY a
SURT prefix (``com,example)/private``), an exact URL's key followed by ``###``, or ``*,``
(every URL); JSON ``{"access": "allow" | "block" | "exclude" | "allow_ignore_embargo",
"url": ..., "user": ...}``, with pywb's date fields (``before``/``after`` a timestamp,
``newer``/``older`` ``{"years": Y, "months": M, "weeks": W, "days": D}``: a rule whose date
does not hold gives the default access, as pywb's). OutbackCDX's fields add to them:
``captured`` and ``accessed`` (``{"start": ..., "end": ...}``, timestamps or ISO 8601
dates, inclusive) and ``period`` (an embargo: the rule holds for so long after capture):
a rule whose criteria do not hold does not apply, and the next longest one is looked at,
as OutbackCDX does; ``publicMessage`` (said with a blocked capture), ``privateComment``,
``reason``, ``creator``/``created``/``modifier``/``modified`` are kept and shown, never
acted on. pywb ignores the fields it does not know.

The rule that wins for a capture (``Rules.decide``): of the rules whose KEY is its key and
``###`` or a prefix of its key, the longest; of those with one KEY, the one for the
request's user (pywb's ``X-Pywb-ACL-User``, OutbackCDX's access point), else the one for
everyone; ``*,`` last. No rule: the default access (allow). A collection-wide ``Embargo``
(pywb's ``before``/``after``/``newer``/``older``) then makes allowed and blocked captures
its access (exclude, or block), but where the rule says ``allow_ignore_embargo``.

``exclude``: the capture is absent (counts, pages and resume keys as if it were not
there); ``block``: it is there, marked ``"access": "block"`` as pywb marks it (pywb's
replay answers it with 451); ``allow``: marked ``"access": "allow"``.

    access = Access(["rules.aclj"], embargo=Embargo(["newer:10y"]))
    check = access.checker(user="staff")
    check(line)    # None (excluded), "allow" or "block"
"""
import hashlib
import json
import os
import re
import stat
import threading
import time

from .. import storage
from ..cdx.urlkey import url_key
from .rules import Checker, Embargo, REMOTE_RECHECK, RuleError, Rules, read_rules


class Access:
    """The rules of a collection, read from ``paths`` (files or directories of ``.aclj``
    files, local or remote) and followed as they change: ``checker()`` reads a file again
    once it changed (a local one looked at each time, a remote one every
    ``REMOTE_RECHECK`` seconds). A file that cannot be read, or with a bad line, raises
    ``RuleError`` from ``checker()`` until it is mended: never an answer without its rules."""

    def __init__(self, paths=(), default="allow", embargo=None):
        self.paths, self.default = list(paths), default
        self._local = [storage.is_local(path) for path in self.paths]
        self.embargo = embargo or Embargo()
        Rules((), default)  # the default checked now
        self._lock = threading.Lock()
        self._versions, self._rules, self._error, self._checked = None, None, None, 0.0
        self.rules()  # a bad file is named at once

    def __bool__(self):
        return bool(self.paths) or bool(self.embargo) or self.default != "allow"

    def _version(self):
        versions = []
        for path, local in zip(self.paths, self._local):
            try:
                if local:
                    version = _stat(path)
                    if stat.S_ISDIR(version[3]):
                        names = sorted(n for n in os.listdir(path) if n.endswith(".aclj"))
                        version = tuple((n, _stat(os.path.join(path, n))) for n in names)
                    versions.append((path, version))
                else:
                    versions.append((path, json.dumps(storage.version(path), sort_keys=True)))
            except OSError as exc:
                versions.append((path, f"unreadable: {exc}"))
        return versions

    def rules(self):
        """The ``Rules`` now in force; RuleError if a file cannot be read."""
        now = time.monotonic()
        with self._lock:
            if self._versions is None or all(self._local) or now - self._checked >= REMOTE_RECHECK:
                versions = self._version()
                self._checked = now
                if versions != self._versions:
                    self._versions = versions
                    try:
                        merged = [rule for path in self.paths for rule in read_rules(path)]
                        self._rules, self._error = Rules(merged, self.default), None
                    except RuleError as exc:
                        self._rules, self._error = None, exc
            if self._error is not None:
                raise RuleError(str(self._error))
            return self._rules

    def checker(self, user=None, now=None):
        return Checker(self.rules(), user, now, self.embargo)


def _stat(path):
    info = os.stat(path)
    return info.st_mtime_ns, info.st_size, info.st_ino, info.st_mode


def from_options(settings, paths=None, embargo=None):
    """The ``Access`` of the options of ``options.ACCESS_CONTROL`` (``paths`` and
    ``embargo``: a collection's own, for serve), None where none is in force. ValueError
    for a bad embargo, RuleError for rules that cannot be read."""
    paths = settings.acl if paths is None else paths
    embargo = Embargo(settings.embargo if embargo is None else embargo, settings.embargo_access)
    access = Access(paths, settings.acl_default, embargo)
    return access if access else None


def checker_of(access, user=None):
    """The ``Checker`` of ``access`` (an ``Access``; None: no rules, everything allowed)
    for ``user``; RuleError as ``Access.checker``."""
    return access.checker(user) if access is not None else Checker(Rules())


def check(checker, url, timestamp=None):
    """The access of ``url`` captured at ``timestamp`` (default: now) for the request of
    ``checker``, and why, as a dict (OutbackCDX's check, with pywb's access words)."""
    key = url_key(url)
    stamp = timestamp or checker.now_ts
    if not re.fullmatch(r"[0-9]{1,14}", stamp):
        raise ValueError(f"{url} {timestamp}: a timestamp is 1 to 14 digits (yyyyMMddhhmmss)")
    access, rule = checker.decide(key, stamp)
    answer = {"url": url, "timestamp": stamp, "access": access, "allowed": access == "allow",
              "rule": rule.line() if rule else None}
    if rule is not None and access != "allow" and rule.fields.get("publicMessage"):
        answer["message"] = rule.fields["publicMessage"]
    return answer


def check_lines(checker, lines):
    """``check_all`` of ``URL [TIMESTAMP]`` lines (blank and ``#`` lines skipped)."""
    return check_all(checker, _check_lines(lines))


def check_all(checker, items):
    """``check`` of each ``(number, url, timestamp)`` of ``items``, as dicts: what
    ``acl check``, ``query --check`` and serve's check answer; one that cannot be
    checked gets ``{"line": number, "url": ..., "timestamp": ..., "error": ...}``."""
    for number, url, stamp in items:
        try:
            yield check(checker, url, stamp or None)
        except ValueError as exc:
            yield {"line": number, "url": url, "timestamp": stamp, "error": str(exc)}


def _check_lines(lines):
    for number, line in enumerate(lines, 1):
        url, _, stamp = line.strip().partition(" ")
        if url and not url.startswith("#"):
            yield number, url, stamp.strip()


class Permitted:
    """A cluster (``zipnum.reader.Cluster``) seen through rules, for what hands captures out
    whole (copy, export): its lookups give the captures they allow, neither excluded nor
    blocked ones (``checker`` counts those)."""

    def __init__(self, cluster, checker):
        self._cluster, self.checker = cluster, checker

    def __getattr__(self, name):
        return getattr(self._cluster, name)

    def lookup_range(self, start, end):
        return filter(self.admits, self._cluster.lookup_range(start, end))

    def admits(self, line):
        return self.checker(line) == "allow"

    @property
    def withheld(self):
        return {"excluded": self.checker.excluded, "blocked": self.checker.blocked}


class Through:
    """A function cluster -> ``Permitted`` cluster under ``access`` for ``user``, and the
    ``digest`` of what decides (the rules read now, user, embargo, default): what a copy's
    plan records, so that one made under other rules is not taken for it."""

    def __init__(self, access, user):
        self.access, self.user = access, user
        rules = access.rules()
        what = [sorted(rule.line() for rule in rules.rules), user, access.embargo.specs,
                access.embargo.access, rules.default]
        self.digest = hashlib.sha1(json.dumps(what).encode("utf-8")).hexdigest()

    def __call__(self, cluster):
        return Permitted(cluster, self.access.checker(self.user))


def permitting(settings):
    """A ``Through`` of the rules of the options of ``options.ACCESS_CONTROL`` (for
    ``settings.acl_user``), or None where none are in force."""
    access = from_options(settings)
    return Through(access, settings.acl_user) if access is not None else None


def _by_collection(specs, option, name_pattern):
    """``{name: [values]}`` of ``NAME=VALUE[,VALUE...]`` ``specs`` of ``option``."""
    values = {}
    for spec in specs:
        name, equals, given = spec.partition("=")
        if not equals or not name_pattern.match(name) or not given.strip(","):
            raise ValueError(f"{option} {spec!r}: expected NAME=VALUE, NAME a collection (e.g. "
                             f"{option} cc=rules.aclj)")
        values.setdefault(name, []).extend(v for v in (given.split(",") if option == "--acl" else [given]) if v)
    return values


def from_serve_options(options, name_pattern):
    """``{name: Access}`` of serve's ``--acl``, ``--embargo`` and ``--acl-default`` (ValueError
    for a bad one, ``RuleError`` for rules that cannot be read); collection names as
    ``name_pattern`` takes them."""
    paths = _by_collection(options.acl, "--acl", name_pattern)
    embargoes = _by_collection(options.embargo, "--embargo", name_pattern)
    accesses = {}
    for name in dict.fromkeys([*paths, *embargoes]):
        accesses[name] = from_options(options, paths.get(name, []), embargoes.get(name, []))
    return {name: a for name, a in accesses.items() if a is not None}


def check_items(body):
    """``[(number, url, timestamp)]`` of a check's body: OutbackCDX's JSON list (numbered
    from 1) or ``URL [TIMESTAMP]`` lines (by line), for ``check_all``."""
    text = body.decode("utf-8", "replace")
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the JSON list of the check is malformed: {exc}") from None
        if not all(isinstance(i, dict) and isinstance(i.get("url"), str) for i in items):
            raise ValueError('expected a JSON list of {"url": URL, "timestamp": TS} objects')
        return [(n, i["url"], str(i.get("timestamp") or "")) for n, i in enumerate(items, 1)]
    return list(_check_lines(text.splitlines()))
