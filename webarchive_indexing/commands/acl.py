"""``webarchive-index acl``: access rule files kept as ``wb-manager acl`` keeps them (pywb's
``.aclj``, sorted in reverse as its binary search needs), written whole or not at all
(``storage.write_atomic``) by one writer at a time, each change logged beside the file
(``FILE.log``: one JSON line with who, when, why and what).

    add(path, "http://example.com/private/", "exclude", who="jsmith", why="takedown 1234")
    remove(path, "http://example.com/private/", why="reviewed")
    rules = load(path)
"""
import datetime
import getpass
import json
import os
import sys

from .. import storage
from ..api.access import check, check_lines
from ..api.rules import ACCESS, Checker, Embargo, Rule, RuleError, Rules, read_rules, rule_key
from ..cdx.urlkey import url_key
from ..options import RULE_FIELDS
from ..storage.lock import hold
from .report import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail, print_problems

__all__ = ["AclError", "load", "save", "add", "remove", "import_list", "problems", "match",
           "log_path", "print_checks"]


class AclError(ValueError):
    """What a change to a rule file cannot do (a rule to remove that is not there)."""


def log_path(path):
    return path + ".log"


def load(path, must_exist=True):
    """The rules of the file ``path`` in its order (none if it is missing and not
    ``must_exist``); RuleError naming a bad line."""
    if not must_exist and not storage.exists(path):
        return []
    return read_rules(path)


def _sorted(rules):
    # pywb's order: its binary search reads the lines in reverse order
    return sorted(rules, key=lambda r: r.line(), reverse=True)


def save(path, rules, change):
    """Write ``rules`` sorted to ``path`` at once, and log ``change`` (a dict) beside it."""
    data = "".join(rule.line() + "\n" for rule in _sorted(rules)).encode("utf-8")
    storage.write_atomic(path, data)
    log = log_path(path)
    before = storage.read_bytes(log) if storage.exists(log) else b""
    storage.write_atomic(log, before + (json.dumps(change) + "\n").encode("utf-8"))


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _who(who):
    if who:
        return who
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _change(path, operation, who, why, **what):
    """A change to the rules of ``path`` under its lock: ``operation(rules) -> (rules,
    logged)``; the file written and the change logged only if the rules changed."""
    local = storage.is_local(path)
    directory = os.path.dirname(os.path.abspath(path)) if local else storage.dirname(path)
    with hold(directory, "acl", lock_file=os.path.abspath(path) + ".lock" if local else None):
        rules = load(path, must_exist=False)
        changed, logged = operation(rules)
        if logged:
            save(path, changed, {"when": _now(), "who": _who(who), "why": why or "", **what, **logged})
        return logged


def new_rule(key, access, url, user=None, fields=None, who=None):
    """A rule for ``key`` (checked as one read from a file would be)."""
    values = {"access": access, "url": url}
    if user:
        values["user"] = user
    values.update({k: v for k, v in (fields or {}).items() if v is not None})
    values.setdefault("creator", _who(who))
    values.setdefault("created", _now())
    return Rule(key, values, f"rule for {url}")


def _put(rules, new):
    """``rules`` with ``new`` added, each replacing a rule of its key and user; the lines
    replaced and added."""
    by_place = {(r.key, r.user): i for i, r in enumerate(rules)}
    rules, replaced = list(rules), []
    for rule in new:
        place = (rule.key, rule.user)
        if place in by_place:
            old = rules[by_place[place]]
            replaced.append(old.line())
            created = {k: old.fields[k] for k in ("creator", "created") if k in old.fields}
            rule = Rule(rule.key, {**rule.fields, **created,
                                   "modifier": rule.fields.get("creator"), "modified": _now()}, rule.where)
            rules[by_place[place]] = rule
        else:
            by_place[place] = len(rules)
            rules.append(rule)
    return rules, replaced


def add(path, url, access, exact=False, user=None, fields=None, who=None, why=None):
    """Add the rule(s) for ``url`` (a URL, URL prefix, ``*.domain`` or SURT prefix) to the
    file ``path`` (made if missing), replacing those of the same key and user. Returns
    ``{"added": [lines], "replaced": [lines]}``."""
    if access not in ACCESS:
        raise AclError(f"access {access!r}: expected one of {', '.join(ACCESS)}")
    new = [new_rule(key, access, url, user, fields, who) for key in rule_key(url, exact)]

    def operation(rules):
        rules, replaced = _put(rules, new)
        return rules, {"op": "add", "added": [r.line() for r in new], "replaced": replaced}
    return _change(path, operation, who, why)


def remove(path, url, exact=False, user=None, who=None, why=None):
    """Remove the rule(s) of ``url`` and ``user`` from ``path``; AclError if there is none."""
    keys = set(rule_key(url, exact))

    def operation(rules):
        kept = [r for r in rules if not (r.key in keys and r.user == user)]
        gone = [r.line() for r in rules if r.key in keys and r.user == user]
        if not gone:
            who_for = f" for user {user}" if user else " for everyone"
            raise AclError(f"{path}: no rule of {', '.join(sorted(keys))}{who_for} to remove "
                           "(webarchive-index acl list FILE shows them)")
        return kept, {"op": "remove", "removed": gone}
    return _change(path, operation, who, why)


def import_list(path, lines, access, source, exact=False, user=None, who=None, why=None):
    """Add a rule of ``access`` for each line of ``lines`` (OpenWayback's
    ``exclusions.txt``: URLs and ``http://(surt,)/`` prefixes; lists of URLs or SURT
    prefixes; blank and ``#`` lines skipped); AclError naming a line that is none."""
    if access not in ACCESS:
        raise AclError(f"access {access!r}: expected one of {', '.join(ACCESS)}")
    new = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            new.extend(new_rule(key, access, text, user, None, who) for key in rule_key(text, exact))
        except (ValueError, RuleError) as exc:
            raise AclError(f"{source}:{number}: {exc}") from None

    def operation(rules):
        rules, replaced = _put(rules, new)
        return rules, {"op": "import", "source": source, "added": len(new) - len(replaced),
                       "replaced": len(replaced)}
    return _change(path, operation, who, why)


def problems(rules, path):
    """What keeps a rule file from being read by pywb as it is meant: lines out of its
    order, two rules for one key and user (pywb takes one of them)."""
    found = []
    lines = [r.line() for r in rules]
    for i in range(1, len(lines)):
        if lines[i] > lines[i - 1]:
            found.append(f"{rules[i].where}: out of order (pywb needs the lines sorted in reverse; "
                         "webarchive-index acl validate --fix sorts them)")
            break
    seen = {}
    for rule in rules:
        place = (rule.key, rule.user)
        if place in seen:
            found.append(f"{rule.where}: a second rule for {rule.key}"
                         f"{' and user ' + rule.user if rule.user else ''} (the first at "
                         f"{seen[place].where}): remove one")
        else:
            seen[place] = rule
    return found


def fix(path, who=None, why=None):
    """Sort the file ``path``; the number of lines (0 if it was sorted)."""
    def operation(rules):
        if [r.line() for r in rules] == [r.line() for r in _sorted(rules)]:
            return rules, None
        return rules, {"op": "sort", "rules": len(rules)}
    logged = _change(path, operation, who, why or "sorted as pywb needs")
    return logged["rules"] if logged else 0


def match(rules, url, user=None, timestamp=None, embargo=None, now=None):
    """``(access, rule, why)``: what rules give a capture of ``url`` at ``timestamp``
    (default now) for ``user``, and the lines that say why."""
    checker = Checker(rules if isinstance(rules, Rules) else Rules(rules), user, now, embargo)
    why = []
    answer = check(checker, url, timestamp)
    checker.decide(url_key(url), answer["timestamp"], why)
    return answer, why


# -- the command --------------------------------------------------------------------------

def run(args):
    """``webarchive-index acl ACTION``: do it, print what it did; the exit status."""
    action = args.acl_command
    try:
        if action in ("add", "remove", "import"):
            return _run_change(args)
        if action == "list":
            for rule in load(args.file):
                sys.stdout.write(rule.line() + "\n")
            return EXIT_OK
        if action == "validate":
            return _run_validate(args)
        embargo = Embargo(args.embargo, args.embargo_access)
        files = args.file if action == "match" else [args.file, *args.acl]
        rules = Rules([r for path in files for r in read_rules(path)], args.acl_default)
        if action == "match":
            answer, why = match(rules, args.url, args.user, args.timestamp, embargo)
            sys.stdout.write(f"{answer['access']}: {args.url} at {answer['timestamp']}"
                             f"{' for ' + args.user if args.user else ''}\n")
            sys.stdout.writelines(f"  {line}\n" for line in why)
            return EXIT_OK
        return print_checks(f"acl {action}", Checker(rules, args.user, embargo=embargo), args.urls)
    except (RuleError, AclError) as exc:
        return fail(f"acl {action}", exc)
    except ValueError as exc:
        return fail(f"acl {action}", exc, EXIT_USAGE)


def print_checks(command, checker, urls):
    """Print the check of each ``URL [TIMESTAMP]`` line of the file ``urls`` (``-``:
    stdin) by ``checker``, a JSON line each (``acl check``, ``query --check``); the exit
    status: failed if a line could not be checked (each one named)."""
    source = "stdin" if urls == "-" else urls
    stream = sys.stdin if urls == "-" else open(urls, encoding="utf-8")
    checked, bad = 0, []
    try:
        with stream:
            for answer in check_lines(checker, stream):
                checked += 1
                if "error" in answer:
                    bad.append({"file": source, "line": answer["line"], "reason": answer["error"]})
                sys.stdout.write(json.dumps(answer) + "\n")
    except UnicodeDecodeError:
        return fail(command, f"{source}: not UTF-8 text after {checked} URLs: is it a list of "
                             "URL [TIMESTAMP] lines?")
    if not bad:
        return EXIT_OK
    print_problems(bad, sys.stderr)
    return fail(command, f"{len(bad)} of {checked} lines of {source} could not be checked (named "
                         "above): mend them and check again")


def _run_change(args):
    if args.acl_command == "add":
        fields = {option.dest: getattr(args, option.dest) for option in RULE_FIELDS}
        for name in ("captured", "accessed"):
            if fields[name] is not None:
                start, comma, end = fields[name].partition(",")
                if not comma:
                    raise ValueError(f"--{name} {fields[name]!r}: expected START,END (either may be empty)")
                fields[name] = {"start": start or None, "end": end or None}
        done = add(args.file, args.url, args.access, args.exact_match, args.user, fields, args.who, args.why)
        for line in done["replaced"]:
            sys.stdout.write(f"replaced: {line}\n")
        sys.stdout.writelines(f"added: {line}\n" for line in done["added"])
    elif args.acl_command == "remove":
        done = remove(args.file, args.url, args.exact_match, args.user, args.who, args.why)
        sys.stdout.writelines(f"removed: {line}\n" for line in done["removed"])
    else:
        with open(args.source, encoding="utf-8") as lines:
            done = import_list(args.file, lines, args.access, args.source, args.exact_match,
                                   args.user, args.who, args.why)
        sys.stdout.write(f"imported {args.source}: {done['added']} rules added, {done['replaced']} "
                         f"replaced, in {args.file}\n")
    return EXIT_OK


def _run_validate(args):
    rules = load(args.file)
    found = problems(rules, args.file)
    if args.fix and any("out of order" in p for p in found):
        fix(args.file, args.who, args.why)
        sys.stdout.write(f"{args.file}: sorted as pywb needs\n")
        found = problems(load(args.file), args.file)
    for problem in found:
        sys.stdout.write(problem + "\n")
    if not found:
        sys.stdout.write(f"{args.file}: {len(rules)} rules, in order\n")
    return EXIT_FAILED if found else EXIT_OK
