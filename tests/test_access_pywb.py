"""Access control against pywb 2.10's own CDX server: the same cluster, the same ``.aclj``
rules (``acl_paths``) and embargo (``embargo`` in its config) give the same lines, the same
``access`` marks and the same statuses from ``serve`` as from pywb, for everyone and for a
user (pywb's ``X-Pywb-ACL-User``; our access point path too)."""
import json

import pytest

import servers
from test_query import LINES
from test_serve import PARITY_QUERIES, params_of
from webarchive_indexing.api import access
from webarchive_indexing.api.collection import Collection
from webarchive_indexing.zipnum.layout import write_cluster
from webarchive_indexing.zipnum.reader import Cluster

RULES = [
    'com,example)/a - {"access": "exclude"}',
    'com,example)/a/b - {"access": "allow"}',
    'com,example)/index.html### - {"access": "block"}',
    'com,example)/p - {"access": "block"}',
    'com,example)/p - {"access": "allow", "user": "staff"}',
    'com,example,blog)/ - {"access": "exclude"}',
    'com,example,blog)/ - {"access": "allow", "user": "staff"}',
    'org,example)/ - {"access": "block", "before": "2016"}',
    'uk,co,example)/ - {"access": "allow_ignore_embargo"}',
    'net,foo)/ - {"access": "exclude", "user": "staff"}',
    'de,site,news)/ - {"access": "block", "newer": {"years": 9}}',
]
# pywb's embargo setting, and ours
EMBARGO = {"newer": {"years": 4}}
QUERIES = PARITY_QUERIES + [("example.com/p/*", None), ("example.com/a", "prefix"), ("news.site.de/", "host")]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("acl")
    out = tmp / "cluster"
    write_cluster(LINES, out, [LINES[len(LINES) // 3], LINES[2 * len(LINES) // 3]], lines_per_block=7)
    rules = tmp / "rules.aclj"
    rules.write_text("".join(line + "\n" for line in sorted(RULES, reverse=True)))
    return tmp, out, rules


@pytest.fixture(scope="module")
def both(setup):
    tmp, out, rules = setup
    ours = Collection("acl", [Cluster(out)], access.Access([str(rules)], embargo=access.Embargo(["newer:4y"])))
    config = {"index": str(out / "cluster.idx"), "acl_paths": [str(rules)], "embargo": EMBARGO}
    with servers.ours({"acl": ours}) as mine, servers.pywb(tmp, {"acl": config}) as pywb:
        yield mine, pywb


def answer(base, user, path="/acl/cdx", **params):
    status, _, body = servers.get(base + path, {"X-Pywb-ACL-User": user} if user else None, **params)
    return status, body


@pytest.mark.parametrize("user", [None, "staff"])
def test_same_lines_and_marks_as_pywb_page_by_page(both, user):
    """pywb answers a ZipNum query a page at a time (page 0 without page=): compared page
    by page, and the pages joined against our whole answer."""
    mine, pywb = both
    compared = marked = 0
    for url, match_type in QUERIES:
        for output in ("json", "cdxj"):
            params = params_of(url, match_type, output=output, pageSize=3)
            info = json.loads(answer(mine, user, showNumPages="true", **params)[1])
            assert json.loads(answer(pywb, user, showNumPages="true", **params)[1]) == info
            pages = []
            for page in range(max(info["pages"], 1)):
                got, want = answer(mine, user, page=page, **params), answer(pywb, user, page=page, **params)
                assert got[0] == want[0], (url, match_type, user, page, got, want)
                if want[0] != 200:
                    continue
                if output == "json":
                    assert servers.json_lines(got[1]) == servers.json_lines(want[1]), (url, match_type, user, page)
                else:
                    assert got[1] == want[1], (url, match_type, user, page)
                pages.append(got[1])
                compared += len(got[1].splitlines())
                marked += got[1].count(b'"access": "block"')
            whole = {k: v for k, v in params.items() if k != "pageSize"}
            assert answer(mine, user, **whole)[1] == b"".join(pages), (url, match_type, user)
    assert compared > 500 and marked > 20  # the rules did something worth comparing


def test_access_point_path_is_the_user(both):
    mine, pywb = both
    params = params_of("example.com", "domain", output="json", page=0, pageSize=50)
    assert answer(mine, None, "/acl/ap/staff/cdx", **params) == answer(pywb, "staff", **params)
    assert answer(mine, None, "/acl/ap/staff/cdx", **params) != answer(pywb, None, **params)
    # the path's access point, not the header's user
    assert answer(mine, "nobody", "/acl/ap/staff/cdx", **params) == answer(pywb, "staff", **params)


def test_rules_hide_what_they_should(both):
    """The comparison above is not of two answers that ignore the rules."""
    mine, _ = both
    everyone = servers.json_lines(answer(mine, None, **params_of("example.com", "domain", output="json"))[1])
    staff = servers.json_lines(answer(mine, "staff", **params_of("example.com", "domain", output="json"))[1])
    plain = [json.loads(line.split(b" ", 2)[2]) for line in LINES if line.startswith((b"com,example)", b"com,example,"))]
    assert not any(line["urlkey"].startswith("com,example,blog)") for line in everyone)
    assert any(line["urlkey"].startswith("com,example,blog)") for line in staff)
    assert not any(line["urlkey"].startswith("com,example)/a") and not line["urlkey"].startswith("com,example)/a/b")
                   for line in everyone)
    assert {line["access"] for line in everyone} == {"allow", "block"}
    assert len(everyone) < len(plain)
