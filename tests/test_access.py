"""Access control (``api/access.py``, ``commands/acl.py``): which rule wins, checked against
pywb 2.10's own ``AccessChecker`` on many rules; OutbackCDX's criteria on the worked examples
of its documentation; embargoes; exact counts, pages, resume keys and limits with rules in
force; rules changed while ``serve`` runs; rule files that cannot be read; the ``acl``
commands; ``copy`` and ``export``; the commands of docs/access-control.md as written."""
import calendar
import gzip
import json
import os
import random
import shlex
import subprocess
import time
import urllib.parse

import pytest
from pywb.warcserver.access_checker import AccessChecker

import servers
from test_docs import documented_commands
from test_query import LINES, URLS
from webarchive_indexing.api import access
from webarchive_indexing.api.access import Access
from webarchive_indexing.api.rules import Embargo, RuleError, Rules, parse_rules
from webarchive_indexing.api.collection import Collection
from webarchive_indexing.api.request import CdxRequest
from webarchive_indexing.api.serve import open_collections
from webarchive_indexing.cdx.urlkey import url_key
from webarchive_indexing.cli import main
from webarchive_indexing.commands import acl
from webarchive_indexing.commands.build import build
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.zipnum.layout import write_cluster
from webarchive_indexing.zipnum.reader import Cluster

BIN = servers.BIN
SAMPLES = os.path.join(os.path.dirname(__file__), "..", "samples")
NOW = calendar.timegm((2024, 6, 15, 12, 0, 0))


def rules_of(*lines, default="allow"):
    return Rules(parse_rules("\n".join(lines), "t.aclj"), default)


def decide(rules, url, timestamp="20200101000000", user=None, embargo=None, now=NOW):
    return rules.decide(url_key(url), timestamp, user, now, embargo)[0]


# -- which rule wins ---------------------------------------------------------------------------

def test_the_same_rule_as_pywbs_access_checker(tmp_path):
    """Thousands of random prefix, exact and per-user rules over the test URLs: pywb's
    AccessChecker (its binary search over the file sorted in reverse) and ours choose the
    same rule for every URL and user."""
    rng = random.Random(24)
    keys = sorted({url_key(u) for u in URLS})
    rules = set()
    for key in rng.sample(keys, 400):
        cut = key[:rng.randint(3, len(key))]
        user = rng.choice([None, None, "staff", "reader"])
        exact = rng.random() < 0.2
        fields = {"access": rng.choice(["allow", "block", "exclude"]), "url": key}
        if user:
            fields["user"] = user
        rules.add(f"{key if exact else cut}{'###' if exact else ''} - {json.dumps(fields)}")
    path = tmp_path / "rules.aclj"
    path.write_text("".join(line + "\n" for line in sorted(rules, reverse=True)))
    ours = Rules(access.read_rules(str(path)))
    pywb = AccessChecker(str(path), "allow")
    matched = 0
    for url in URLS:
        for user in (None, "staff", "reader"):
            want = pywb.find_access_rule(url, acl_user=user)
            got = ours.decide(url_key(url), "20200101000000", user)[1]
            want_line = None if want.get("default") else f"{want['urlkey']} - {json.dumps(dict(list(want.items())[2:]))}"
            assert (got.line() if got else None) == want_line, (url, user)
            matched += got is not None
    assert matched > 1000


def test_longest_prefix_exact_users_and_any():
    rules = rules_of('com,example)/a - {"access": "exclude"}',
                     'com,example)/a/b - {"access": "allow"}',
                     'com,example)/a### - {"access": "block"}',
                     'com,example)/a - {"access": "allow", "user": "staff"}',
                     'com,example)/x - {"access": "allow", "user": "staff"}',
                     '*, - {"access": "block"}')
    assert decide(rules, "http://example.com/a") == "block"          # exact first
    assert decide(rules, "http://example.com/a", user="staff") == "block"
    assert decide(rules, "http://example.com/ab") == "exclude"       # a prefix of the key, as pywb
    assert decide(rules, "http://example.com/a/b/c") == "allow"      # the longest prefix
    assert decide(rules, "http://example.com/a/c", user="staff") == "allow"
    assert decide(rules, "http://example.com/x") == "block"          # another's rule passed over: *,
    assert decide(rules, "http://other.org/") == "block"             # *, holds last, always
    assert decide(rules_of(), "http://other.org/") == "allow"
    assert decide(rules_of(default="exclude"), "http://other.org/") == "exclude"


def test_outbackcdx_criteria_as_its_documentation_describes():
    """Its worked examples: content restricted only for captures of a time range; a
    restriction that expires (a takedown under review); an embargo period after capture.
    Where a criterion does not hold, the rule does not apply and a shorter one may."""
    rules = rules_of(
        'org,example)/ - {"access": "allow"}',
        'org,example)/restricted - {"access": "exclude", "captured": {"start": "2015-08-01T01:00:00+1000", '
        '"end": "2015-11-12T01:59:59+1100"}}',
        'org,example)/review - {"access": "block", "accessed": {"start": "2024-06-01", "end": "2024-06-30"}}',
        'org,example)/recent - {"access": "exclude", "period": {"years": 0, "months": 6, "days": 0}}')
    assert decide(rules, "http://example.org/restricted", "20150901000000") == "exclude"
    assert decide(rules, "http://example.org/restricted", "20150731145959") == "allow"  # 2015-08-01T01:00+10
    assert decide(rules, "http://example.org/restricted", "20160101000000") == "allow"
    assert decide(rules, "http://example.org/review") == "block"
    assert decide(rules, "http://example.org/review", now=calendar.timegm((2024, 7, 1, 0, 0, 0))) == "allow"
    assert decide(rules, "http://example.org/recent", "20240301000000") == "exclude"  # within 6 months
    assert decide(rules, "http://example.org/recent", "20231201000000") == "allow"


def test_pywb_date_fields_and_collection_embargo():
    rules = rules_of('org,example)/old - {"access": "block", "before": "2016"}',
                     'org,example)/free - {"access": "allow_ignore_embargo"}',
                     'org,example)/gone - {"access": "exclude"}',
                     'org,example)/young - {"access": "block", "newer": {"years": 1}}')
    assert decide(rules, "http://example.org/old", "20161231235958") == "block"  # before 2016 padded: 20161231235959
    assert decide(rules, "http://example.org/old", "2017") == "allow"  # the default, as pywb
    assert decide(rules, "http://example.org/young", "20240101000000") == "block"
    assert decide(rules, "http://example.org/young", "20230101000000") == "allow"
    embargo = Embargo(["newer:10y"])
    assert decide(rules, "http://example.org/x", "20200101000000", embargo=embargo) == "exclude"
    assert decide(rules, "http://example.org/x", "20100101000000", embargo=embargo) == "allow"
    assert decide(rules, "http://example.org/free", "20200101000000", embargo=embargo) == "allow"
    assert decide(rules, "http://example.org/gone", "20100101000000", embargo=embargo) == "exclude"
    assert decide(rules, "http://example.org/x", "2020", embargo=Embargo(["after:2019"], "block")) == "block"
    assert decide(rules, "http://example.org/x", "2019", embargo=Embargo(["after:2019"])) == "allow"
    assert decide(rules, "http://example.org/x", "2018", embargo=Embargo(["before:2019"])) == "exclude"
    assert decide(rules, "http://example.org/x", "2020", embargo=Embargo(["older:1y"])) == "exclude"
    pywb_config = Embargo.from_pywb({"newer": {"years": 10}, "access": "block"})
    assert decide(rules, "http://example.org/x", "20200101000000", embargo=pywb_config) == "block"
    for bad in (["newer:ten"], ["since:2019"], ["before:20x"]):
        with pytest.raises(ValueError, match="embargo"):
            Embargo(bad)


@pytest.mark.parametrize("line, message", [
    ('com,example)/ {"access": "block"}', r"t\.aclj:2: expected KEY - \{"),
    ('com,example)/ - {"access": "blok"}', r't\.aclj:2: "access" must be one of'),
    ('com,example)/ - {"access": "block"', r"t\.aclj:2: the JSON of the rule is malformed"),
    ('com,example)/ - {"access": "block", "newer": {"yrs": 1}}', r't\.aclj:2: "newer": expected'),
    ('com,example)/ - {"access": "block", "captured": {"start": "soon"}}', r't\.aclj:2: "captured" start'),
    ('com,example)/ - {"access": "block", "user": 7}', r't\.aclj:2: "user" must be a name'),
])
def test_a_malformed_rule_is_named_by_its_line(line, message):
    with pytest.raises(RuleError, match=message):
        parse_rules('com,example)/a - {"access": "allow"}\n' + line, "t.aclj")


# -- exact answers with rules in force -----------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    out = tmp_path_factory.mktemp("acl-cluster")
    write_cluster(LINES, out, [LINES[len(LINES) // 2]], lines_per_block=7)
    rules = out / "rules.aclj"
    rules.write_text('com,example)/a - {"access": "exclude"}\ncom,example)/p - {"access": "block"}\n'
                     'com,example,blog)/ - {"access": "exclude"}\n')
    return out, rules


def answer(collection, **params):
    return b"".join(collection.answer(CdxRequest(**params))[1])


def test_counts_pages_resume_keys_and_limits_are_exact(cluster):
    out, rules = cluster
    collection = Collection("c", [Cluster(out)], Access([str(rules)], embargo=Embargo(["newer:8y"])))
    url = "*.example.com"
    whole = answer(collection, url=url, output="json").splitlines()
    plain = answer(Collection("c", [Cluster(out)]), url=url, output="json").splitlines()
    assert 0 < len(whole) < len(plain) - 100
    assert not any(b'"urlkey": "com,example)/a' in line or b"com,example,blog" in line for line in whole)
    assert {json.loads(line)["access"] for line in whole} == {"allow", "block"}
    assert json.loads(answer(collection, url=url, show_num_captures=True)) == {"captures": len(whole)}
    # resume keys: pieces of 7 joined are the whole
    pieces, key = [], None
    while True:
        body = answer(collection, url=url, output="json", limit=7, show_resume_key=True,
                      **({"resume_key": key} if key else {})).splitlines()
        key = json.loads(body[-1]).get("resumeKey") if body and b"resumeKey" in body[-1] else None
        pieces += body[:-1] if key else body
        if not key:
            break
    assert pieces == whole
    assert answer(collection, url=url, output="json", limit=-5).splitlines() == whole[-5:]
    assert answer(collection, url=url, output="json", limit=5).splitlines() == whole[:5]
    info = json.loads(answer(collection, url=url, show_num_pages=True, page_size=2))
    pages = [answer(collection, url=url, output="json", page=p, page_size=2) for p in range(info["pages"])]
    assert b"".join(pages).splitlines() == whole
    some = json.loads(next(line for line in LINES if line.startswith(b"com,example)/p/")
                           and line.split(b" ")[1] < b"2014").split(b" ", 2)[2])["url"]
    closest = answer(collection, url=some, closest="2015", output="json")
    assert closest and all(json.loads(line)["access"] == "block" for line in closest.splitlines())


def test_query_command_with_rules(cluster, capsysbinary):
    out, rules = cluster
    assert main(["query", str(out), "example.com/a", "--match-type", "prefix", "--acl", str(rules), "--count"]) == 0
    assert json.loads(capsysbinary.readouterr().out) == {"captures": 0}
    assert main(["query", str(out), "example.com/p/*", "--acl", str(rules), "--fl", "timestamp,access"]) == 0
    lines = capsysbinary.readouterr().out.splitlines()
    assert lines and all(line.endswith(b'{"access": "block"}') for line in lines)
    bad = out / "bad.aclj"
    bad.write_text('com,example)/ - {"access": "allow"}\n\ncom,example)/a - {access: block}\n')
    assert main(["query", str(out), "example.com/", "--acl", str(bad)]) == 1
    err = capsysbinary.readouterr()
    assert not err.out and f"{bad}:3: the JSON of the rule is malformed" in err.err.decode()
    assert main(["query", str(out), "example.com/", "--acl", str(out / "missing.aclj")]) == 1
    assert "missing.aclj: cannot read the access rules" in capsysbinary.readouterr().err.decode()
    assert main(["query", str(out), "example.com/", "--embargo", "newer:soon"]) == 2


# -- serve -------------------------------------------------------------------------------------

def test_serve_follows_rule_changes_and_refuses_without_its_rules(cluster, tmp_path):
    out, _ = cluster
    rules = tmp_path / "live.aclj"
    rules.write_text("")
    access_ = Access([str(rules)])
    with servers.ours(open_collections([f"c={out}"], accesses={"c": access_})) as base:
        def count(**headers):
            status, _, body = servers.get(base + "/c/cdx", headers, url="example.com/", showNumCaptures="true")
            return status, json.loads(body)
        everything = count()[1]["captures"]
        assert everything > 0
        rules.write_text('com,example)/ - {"access": "exclude"}\n')
        assert count() == (200, {"captures": 0})
        rules.write_text('com,example)/ - {"access": "exclude"}\ncom,example)/ - {"access": "allow", "user": "staff"}\n')
        assert count() == (200, {"captures": 0})
        assert count(**{"X-Pywb-ACL-User": "staff"}) == (200, {"captures": everything})
        rules.write_text('com,example)/ - {"access": "exclude"\n')  # broken: never everything
        status, body = count()
        assert status == 503 and "access rules cannot be read" in body["message"]
        check = servers.get(base + "/c/ap/staff/check", url="http://example.com/")
        assert check[0] == 503
        os.remove(rules)
        assert count()[0] == 503
        rules.write_text('com,example)/ - {"access": "block", "publicMessage": "later"}\n')
        assert count() == (200, {"captures": everything})
        status, _, body = servers.get(base + "/c/ap/public/check", url="http://example.com/", timestamp="2020")
        assert status == 200 and json.loads(body) == {
            "url": "http://example.com/", "timestamp": "2020", "access": "block", "allowed": False,
            "rule": 'com,example)/ - {"access": "block", "publicMessage": "later"}', "message": "later"}


def test_serve_bulk_check_as_outbackcdx(cluster):
    out, rules = cluster
    with servers.ours(open_collections([f"c={out}"], accesses={"c": Access([str(rules)])})) as base:
        import http.client
        parts = urllib.parse.urlsplit(base)
        for body in (b"http://example.com/a/b 2020\nhttp://example.com/q\n\nhttp://example.com/p/3 2019\n",
                     json.dumps([{"url": "http://example.com/a/b", "timestamp": "2020"},
                                 {"url": "http://example.com/q"}, {"url": "http://example.com/p/3"}]).encode()):
            conn = http.client.HTTPConnection(parts.netloc, timeout=30)
            conn.request("POST", "/c/ap/public/check", body=body)
            response = conn.getresponse()
            answers = json.loads(response.read())
            conn.close()
            assert response.status == 200
            assert [a["access"] for a in answers] == ["exclude", "allow", "block"]


def test_serve_command_refuses_a_malformed_rule_file(cluster, tmp_path):
    out, _ = cluster
    bad = tmp_path / "bad.aclj"
    bad.write_text('com,example)/ - {"access": "nope"}\n')
    result = subprocess.run([os.path.join(BIN, "webarchive-index"), "serve", f"c={out}", "--acl", f"c={bad}",
                             "--port", str(servers.free_port())], capture_output=True, timeout=60)
    assert result.returncode == 1
    assert f"{bad}:1: \"access\" must be one of" in result.stderr.decode() and b"Traceback" not in result.stderr
    bad.write_text('com,example)/ - {"access": "block"}\n')
    result = subprocess.run([os.path.join(BIN, "webarchive-index"), "serve", f"c={out}", "--acl", f"d={bad}",
                             "--port", str(servers.free_port())], capture_output=True, timeout=60)
    assert result.returncode == 2 and b"which no NAME=CLUSTER names" in result.stderr


# -- the acl commands ----------------------------------------------------------------------------

def test_acl_commands_keep_the_file_as_pywb_reads_it(tmp_path, capsys):
    path = str(tmp_path / "rules.aclj")
    assert main(["acl", "add", path, "http://example.com/private/", "exclude", "--who", "jsmith",
                 "--why", "takedown 17"]) == 0
    assert main(["acl", "add", path, "http://example.com/private/", "allow", "-u", "staff"]) == 0
    assert main(["acl", "add", path, "http://example.com/page", "block", "-e", "--message", "on site"]) == 0
    assert main(["acl", "add", path, "*.example.org", "exclude", "--period", "1y",
                 "--captured", "2010,"]) == 0
    exclusions = tmp_path / "exclusions.txt"
    exclusions.write_text("# OpenWayback\nhttp://(com,foo,)/bar\nhttp://example.net/x\ncom,baz)/\n")
    assert main(["acl", "import", path, str(exclusions), "block"]) == 0
    assert main(["acl", "add", path, "http://example.com/private/", "block", "--why", "changed"]) == 0
    capsys.readouterr()
    lines = open(path).read().splitlines()
    assert lines == sorted(lines, reverse=True) and len(lines) == 8
    log = [json.loads(line) for line in open(path + ".log")]
    assert [entry["op"] for entry in log] == ["add"] * 4 + ["import", "add"]
    assert log[0]["who"] == "jsmith" and log[0]["why"] == "takedown 17" and log[-1]["replaced"]
    assert not [n for n in os.listdir(tmp_path) if n not in ("rules.aclj", "rules.aclj.log", "exclusions.txt")]
    # pywb reads the file and chooses as we do
    pywb = AccessChecker(path, "allow")
    for url, user, want in (("http://example.com/private/a", None, "block"),
                            ("http://example.com/private/a", "staff", "allow"),
                            ("http://example.com/page", None, "block"), ("http://foo.com/bar/x", None, "block"),
                            ("http://example.net/x/y", None, "block"), ("http://baz.com/", None, "block"),
                            ("http://www.example.org/", None, "exclude"), ("http://example.com/", None, "allow")):
        assert pywb.find_access_rule(url, acl_user=user)["access"] == want, url
        assert decide(Rules(acl.load(path)), url, "2024", user, now=NOW) == want, url
    assert main(["acl", "match", path, "http://example.com/private/a", "-u", "staff"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("allow: ") and '"user": "staff"' in shown
    assert main(["acl", "validate", path]) == 0
    assert main(["acl", "remove", path, "http://example.com/page", "-e", "--why", "released"]) == 0
    assert main(["acl", "remove", path, "http://example.com/page", "-e"]) == 1
    assert "no rule of com,example)/page### for everyone" in capsys.readouterr().err
    urls = tmp_path / "urls.txt"
    urls.write_text("http://example.com/private/a 2020\nhttp://example.com/\nnot a url at all 2x\n")
    assert main(["acl", "check", path, str(urls), "-u", "staff"]) == 1  # a line that is none
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o.get("access") for o in out] == ["allow", "allow", None] and out[2]["line"] == 3
    # out of order (a hand edit): named, then sorted
    with open(path, "a") as fh:
        fh.write('zz,late)/ - {"access": "exclude"}\n')
    assert main(["acl", "validate", path]) == 1
    assert "out of order" in capsys.readouterr().out
    assert main(["acl", "validate", path, "--fix"]) == 0
    assert open(path).read().splitlines()[0].startswith("zz,late)/")


# -- copy and export ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def samples_cluster(tmp_path_factory):
    out = tmp_path_factory.mktemp("samples")
    build([SAMPLES], str(out / "out"), BuildOptions(runner="local", shards=2, lines_per_block=10))
    rules = out / "rules.aclj"
    rules.write_text('org,archive)/images - {"access": "exclude"}\norg,archive)/index.php - {"access": "block"}\n')
    return out, rules


def test_export_and_copy_leave_out_what_the_rules_withhold(samples_cluster, capsys):
    tmp, rules = samples_cluster
    out = str(tmp / "out")
    assert main(["export", out, "-o", str(tmp / "public.cdxj.gz"), "--acl", str(rules)]) == 0
    assert "withheld by the access rules: 6 excluded, 3 blocked" in capsys.readouterr().err
    assert main(["export", out, "-o", str(tmp / "all.cdxj.gz")]) == 0
    everything = gzip.open(tmp / "all.cdxj.gz").read().splitlines()
    public = gzip.open(tmp / "public.cdxj.gz").read().splitlines()
    assert public == [line for line in everything
                      if not line.startswith((b"org,archive)/images", b"org,archive)/index.php"))]
    assert len(public) == len(everything) - 9
    assert main(["export", out, "--format", "parquet", "-o", str(tmp / "table"), "--acl", str(rules)]) == 0
    import pyarrow.dataset as ds
    table = ds.dataset(str(tmp / "table"), format="parquet", partitioning="hive").to_table()
    assert table.num_rows == len(public)
    capsys.readouterr()
    assert main(["copy", "check", out, "--domains", "archive.org", "--acl", str(rules), "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["total"]["captures"] == 16 - 9 and checked["withheld"] == {"excluded": 6, "blocked": 3}
    assert main(["copy", "copy", out, "--domains", "archive.org", "--acl", str(rules), "-o", str(tmp / "copied"),
                 "--warc-prefix", SAMPLES, "--workers", "1"]) == 0
    copied = b"".join(open(tmp / "copied" / n, "rb").read() for n in sorted(os.listdir(tmp / "copied"))
                      if n.endswith(".cdxj")).splitlines()
    assert len(copied) == 7 and not any(b"/images" in line or b"index.php" in line for line in copied)
    capsys.readouterr()
    csv = tmp / "records.csv"
    csv.write_text("url,warc_filename,warc_record_offset,warc_record_length\n")
    assert main(["copy", "check", "--records-csv", str(csv), "--acl", str(rules)]) == 2


# -- the commands of docs/access-control.md, as written ---------------------------------------------

def test_the_commands_of_docs_access_control_md_run_as_written(samples_cluster, tmp_path):
    tmp, _ = samples_cluster
    os.symlink(tmp / "out", tmp_path / "out")
    (tmp_path / "rules").mkdir()
    (tmp_path / "exclusions.txt").write_text("http://(org,wikipedia,an,)/\nhttp://archive.org/robots.txt\n")
    (tmp_path / "urls.txt").write_text("http://archive.org/images/star.png 20131021215315\nhttp://archive.org/\n")
    commands = [c for where, c in documented_commands() if where.startswith("docs/access-control.md")]
    assert len(commands) > 15
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"]}
    server = None
    try:
        for command in commands:
            words = shlex.split(command)
            if words[:2] == ["webarchive-index", "serve"]:
                port = words[words.index("--port") + 1]
                del words[words.index("--port"):words.index("--port") + 2]
                server = servers.command(words[2:], cwd=tmp_path, env=env)
                base, _ = server.__enter__()
                continue
            if words[0] == "curl":
                words = ["curl", "-sf", *(w.replace(f"127.0.0.1:{port}", base.split("//")[1]) for w in words[1:])]
            result = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, timeout=120)
            assert result.returncode == 0, (command, result.stderr.decode())
            if "ap/staff/cdx" in command or "X-Pywb-ACL-User" in command:
                assert b"archive.org/images/star.png" in result.stdout  # staff see it
            if "--acl-user staff --count" in command:
                assert json.loads(result.stdout)["captures"] > 10
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    log = [json.loads(line) for line in open(tmp_path / "rules" / "public.aclj.log")]
    assert log[0]["who"] == "jsmith" and log[-1]["why"] == "released"


def test_a_change_keeps_the_other_lines_as_they_were_written(tmp_path):
    """A rule file written by hand (or by pywb) keeps its lines byte for byte: only the
    rule changed is written anew, and the order pywb needs is by the lines as they are."""
    path = tmp_path / "hand.aclj"
    path.write_text('org,example)/ - {"access":"block",  "url":"http://example.org/"}\n'
                    'com,example)/ - {"user": "staff", "access": "allow"}\n')
    before = path.read_text().splitlines()
    acl.add(str(path), "http://example.net/", "exclude", who="t")
    after = path.read_text().splitlines()
    assert before[0] in after and before[1] in after and len(after) == 3
    assert after == sorted(after, reverse=True)
    assert main(["acl", "validate", str(path)]) == 0


def test_rules_changed_under_load_never_let_everything_through(cluster, tmp_path):
    """Requests from many threads while the rule is added and removed (atomically, by the
    acl commands): each answer is whole under one version of the rules or the other."""
    import threading
    out, _ = cluster
    rules = tmp_path / "load.aclj"
    acl.add(str(rules), "http://example.com/", "exclude", who="t")
    with servers.ours(open_collections([f"c={out}"], accesses={"c": Access([str(rules)])})) as base:
        def count():
            status, _, body = servers.get(base + "/c/cdx", url="example.com/", matchType="prefix",
                                          showNumCaptures="true")
            assert status == 200, body
            return json.loads(body)["captures"]
        hidden = count()
        seen, stop = set(), threading.Event()

        def ask():
            while not stop.is_set():
                seen.add(count())
        threads = [threading.Thread(target=ask) for _ in range(6)]
        for thread in threads:
            thread.start()
        for _ in range(10):
            acl.remove(str(rules), "http://example.com/", who="t")
            time.sleep(0.05)
            acl.add(str(rules), "http://example.com/", "exclude", who="t")
            time.sleep(0.05)
        stop.set()
        for thread in threads:
            thread.join()
        acl.remove(str(rules), "http://example.com/", who="t")
        shown = count()
    assert hidden == 0 and shown > 0 and seen == {0, shown}


def test_a_copy_plan_made_under_other_rules_is_not_reused(samples_cluster, tmp_path, capsys):
    tmp, rules = samples_cluster
    out = str(tmp / "out")
    args = ["copy", "plan", out, "--domains", "archive.org", "-o", str(tmp_path / "c")]
    assert main([*args, "--acl", str(rules)]) == 0
    assert main([*args, "--acl", str(rules)]) == 0  # the same rules: the same plan
    assert main(args) == 2
    assert "differs in: the access rules" in capsys.readouterr().err
    other = tmp_path / "other.aclj"
    other.write_text('org,archive)/images - {"access": "exclude"}\n')
    assert main([*args, "--acl", str(other)]) == 2
