"""The bulk access check in ``query`` (``query CLUSTER --acl FILE --check URLS``, issue 24's
last point): the same answers, line for line, as ``acl check`` and serve's
``/NAME/ap/AP/check`` under the same rules, user and embargo; a line that is none named by
its number, the exit status failed; rules that cannot be read refuse. And the one way the
commands say what stopped them (``commands.report.fail``)."""
import ast
import io
import json
import os
import urllib.parse

import pytest

import servers
from webarchive_indexing import options as o
from webarchive_indexing.api import access
from webarchive_indexing.api.serve import NAME, open_collections
from webarchive_indexing.cli import _parser, main
from webarchive_indexing.zipnum.layout import write_cluster

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "webarchive_indexing")

RULES = (
    'com,example)/private - {"access": "exclude", "url": "http://example.com/private"}\n'
    'com,example)/private - {"access": "allow", "url": "http://example.com/private", "user": "staff"}\n'
    'com,example)/page.html### - {"access": "block", "publicMessage": "In the reading room only"}\n'
    'com,example)/old - {"access": "allow_ignore_embargo"}\n'
    'com,example)/news - {"access": "block", "captured": {"start": "2015", "end": "2016"}}\n'
)
# line 5 is blank, 6 a comment, 9 and 12 are not URL [TIMESTAMP] lines
URLS = ("http://example.com/private/a 2020\n"
        "http://example.com/page.html 20200101000000\n"
        "http://example.com/page.html/more 2020\n"
        "http://example.com/old/x 2005\n"
        "\n"
        "# a takedown request\n"
        "http://example.com/new 2005\n"
        "http://example.com/news/1 20150601\n"
        "http://example.com/x 2020-01-01\n"
        "http://example.com/news/2 2017\n"
        "https://www.example.com/private\n"
        "http://example.com/ 1 2\n")
ACCESS = ["--embargo", "before:2010"]


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """A cluster (which the check never reads), the rules beside it, the URL list."""
    out = tmp_path_factory.mktemp("check")
    line = 'com,example)/ 20200101000000 {"url": "http://example.com/", "status": "200"}\n'
    write_cluster([line.encode()], out / "cluster", [])
    (out / "rules.aclj").write_text(RULES)
    (out / "urls.txt").write_text(URLS)
    return out


def run(capsys, args):
    status = main(args)
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def served(out, user):
    """The answers of serve's check (a POST of the list) of collection c, set up as
    ``serve c=CLUSTER --acl c=FILE --embargo c=...`` sets it up, for ``user`` (an access
    point; None: everyone)."""
    args = _parser("serve").parse_args(["serve", f"c={out / 'cluster'}", "--acl", f"c={out / 'rules.aclj'}",
                                        "--embargo", f"c={ACCESS[1]}"])
    options = o.ServeOptions.from_args(args)
    with servers.ours(open_collections(options.collections,
                                       accesses=access.from_serve_options(options, NAME))) as base:
        import http.client
        conn = http.client.HTTPConnection(urllib.parse.urlsplit(base).netloc, timeout=30)
        try:
            conn.request("POST", f"/c/ap/{user}/check" if user else "/c/check", body=URLS.encode())
            response = conn.getresponse()
            assert response.status == 200
            return json.loads(response.read())
        finally:
            conn.close()


def without_now(answers):
    """The answers, the timestamp of a line that gave none (now: a second apart from one
    command to the next) taken out."""
    given = {line.split(" ")[0] for line in URLS.splitlines() if " " in line}
    for answer in answers:
        if answer.get("url") not in given and "error" not in answer:
            assert len(answer["timestamp"]) == 14
            answer = {k: v for k, v in answer.items() if k != "timestamp"}
        yield answer


@pytest.mark.parametrize("user", [None, "staff"])
def test_query_acl_check_and_serve_give_the_same_answers(collection, capsys, user):
    out = collection
    who = ["--acl-user", user] if user else []
    status, queried, err = run(capsys, ["query", str(out / "cluster"), "--acl", str(out / "rules.aclj"),
                                        *who, *ACCESS, "--check", str(out / "urls.txt")])
    assert status == 1, err  # two lines are none
    checked = run(capsys, ["acl", "check", str(out / "rules.aclj"), str(out / "urls.txt"),
                           *(["--user", user] if user else []), *ACCESS])
    assert checked[0] == 1
    assert [*without_now(queried)] == [*without_now(checked[1])] == [*without_now(served(out, user))]
    access_of = {(a["url"], a.get("timestamp")): a["access"] for a in without_now(queried) if "access" in a}
    assert access_of == {
        ("http://example.com/private/a", "2020"): "allow" if user else "exclude",
        ("http://example.com/page.html", "20200101000000"): "block",
        ("http://example.com/page.html/more", "2020"): "allow",
        ("http://example.com/old/x", "2005"): "allow",  # allow_ignore_embargo
        ("http://example.com/new", "2005"): "exclude",  # the embargo
        ("http://example.com/news/1", "20150601"): "block",
        ("http://example.com/news/2", "2017"): "allow",  # captured out of the rule's range
        ("https://www.example.com/private", None): "allow" if user else "exclude",  # now
    }
    assert [a["message"] for a in queried if "message" in a] == ["In the reading room only"]
    assert [(a["line"], a["url"]) for a in queried if "error" in a] == [
        (9, "http://example.com/x"), (12, "http://example.com/")]


def test_a_bad_line_is_named_by_its_number_and_the_status_says_so(collection, capsys, monkeypatch):
    out = collection
    monkeypatch.setattr("sys.stdin", io.StringIO("http://example.com/private 2020\nexample.com/ 20x\n"))
    status, answers, err = run(capsys, ["query", str(out / "cluster"), "--acl", str(out / "rules.aclj"),
                                        "--check", "-"])
    assert status == 1
    assert answers[0]["access"] == "exclude" and answers[1]["line"] == 2
    assert "error: stdin: line 2: example.com/ 20x: a timestamp is 1 to 14 digits" in err
    assert err.endswith("webarchive-index query: 1 of 2 lines of stdin could not be checked (named "
                        "above): mend them and check again\n")
    assert "Traceback" not in err
    good = out / "good.txt"
    good.write_text("http://example.com/private 2020\n")
    assert run(capsys, ["query", str(out / "cluster"), "--acl", str(out / "rules.aclj"),
                        "--check", str(good)])[:2] == (0, [{
                            "url": "http://example.com/private", "timestamp": "2020", "access": "exclude",
                            "allowed": False, "rule": RULES.splitlines()[0]}])
    binary = out / "binary.txt"
    binary.write_bytes(b"http://example.com/ 2020\n\xff\xfe\n")
    status, _, err = run(capsys, ["query", str(out / "cluster"), "--check", str(binary)])
    assert status == 1 and f"webarchive-index query: {binary}: not UTF-8 text" in err


def test_rules_that_cannot_be_read_refuse_rather_than_allow_all(collection, capsys):
    out = collection
    bad = out / "bad.aclj"
    bad.write_text('com,example)/ - {"access": "exclude"}\ncom,example)/x - {"access": "nope"}\n')
    for rules, named in ((bad, f"{bad}:2: "), (out / "missing.aclj", f"{out / 'missing.aclj'}: cannot read")):
        status, answers, err = run(capsys, ["query", str(out / "cluster"), "--acl", str(rules),
                                            "--check", str(out / "urls.txt")])
        assert (status, answers) == (1, []), err
        assert err.startswith(f"webarchive-index query: {named}") and "Traceback" not in err


def test_check_takes_no_query_options(collection, capsys):
    out = collection
    cluster, urls = str(out / "cluster"), str(out / "urls.txt")
    for args, said in ((["example.com/", "--check", urls], "URL would not apply"),
                       (["--check", urls, "--limit", "2", "--output", "json"], "--limit, --output would not apply"),
                       ([], "no URL to query: give one")):
        status, answers, err = run(capsys, ["query", cluster, *args])
        assert (status, answers) == (2, []) and said in err, err


def _says_and_returns(tree):
    """The places where a command writes ``webarchive-index ...: ...`` on stderr and then
    returns: what ``commands.report.fail`` does."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "fail":
            continue
        body = getattr(node, "body", None)
        for block in (body, getattr(node, "orelse", None), getattr(node, "finalbody", None)):
            if not isinstance(block, list):
                continue
            for said, then in zip(block, block[1:]):
                call = getattr(said, "value", None)
                if (isinstance(then, ast.Return) and isinstance(call, ast.Call) and call.args
                        and ast.unparse(call.func) == "sys.stderr.write"
                        and "webarchive-index" in ast.unparse(call.args[0])):
                    yield said.lineno


def test_commands_say_what_stopped_them_one_way():
    found = []
    for directory, _, names in os.walk(PACKAGE):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as source:
                    text = source.read()
                if "sys.stderr.write" in text and "webarchive-index" in text:  # the rest cannot
                    found += [f"{os.path.relpath(path, PACKAGE)}:{n}" for n in _says_and_returns(ast.parse(text))]
    assert not found, f"say it with commands.report.fail (message, exit status): {found}"
