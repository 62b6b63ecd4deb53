"""Benchmark: what access rules cost a lookup (target: a few thousand rules at most 1.2x
the time of the same lookups without rules).

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/access.py                 # 300,000 lines, 3,000 rules, 2,000 lookups
    python bench/access.py --quick         # 60,000 lines, 3,000 rules, 500 lookups
    python bench/access.py --rules 10000

1. A ZipNum cluster of `--lines` synthetic CDXJ lines (Common-Crawl-shaped: `--hosts`
   hosts, paths, 1-4 captures a URL), 3000 lines a block, cached in bench/out/access/.
2. `--rules` rules in one `.aclj` file, drawn from the cluster's keys: host and path
   prefixes, exact URLs (`###`), a quarter of them for a user; allow, block and exclude.
3. The same mix of lookups with and without the rules, in one process through
   `Collection.answer` (what `query` and `serve` run), a 64 MiB block cache warmed first:
   70% exact URLs, 15% prefixes (`host/path*`), 15% domains (`*.host`), `limit=100`, JSON.
   Rounds alternate (without, with) `--repeat` times; the best round of each is compared.
4. Also the rules' own cost: decisions per second on every line of the cluster.

Exit status 1 if the ratio is above 1.2.
"""
import argparse
import json
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
if os.path.realpath(sys.executable) != os.path.realpath(PYTHON) and os.path.exists(PYTHON):
    os.execv(PYTHON, [PYTHON, *sys.argv])
sys.path.insert(0, ROOT)

from webarchive_indexing.api.access import Access  # noqa: E402
from webarchive_indexing.api.collection import Collection  # noqa: E402
from webarchive_indexing.api.request import CdxRequest  # noqa: E402
from webarchive_indexing.cdx.urlkey import url_key  # noqa: E402
from webarchive_indexing.zipnum.layout import write_cluster  # noqa: E402
from webarchive_indexing.zipnum.reader import BlockCache, open_cluster  # noqa: E402

OUT = os.path.join(ROOT, "bench", "out", "access")
TLDS = ("com", "org", "net", "de", "fr", "co.uk", "nl", "ru")
WORDS = ("news", "blog", "shop", "about", "index", "page", "article", "search", "img", "docs")


def urls_of(rng, hosts, lines):
    names = [f"{rng.choice(WORDS)}{n}.{rng.choice(TLDS)}" for n in range(hosts)]
    urls, count = [], 0
    while count < lines:
        host = rng.choice(names)
        sub = rng.choice(["", "www.", "m.", f"{rng.choice(WORDS)}."])
        path = "/".join(rng.choice(WORDS) + str(rng.randint(0, 50)) for _ in range(rng.randint(0, 3)))
        url = f"https://{sub}{host}/{path}" + (f"?id={rng.randint(0, 999)}" if rng.random() < 0.2 else "")
        urls.append(url)
        count += rng.randint(1, 4)
    return names, urls


def make_cluster(rng, hosts, lines):
    directory = os.path.join(OUT, f"cluster-{lines}-{hosts}")
    urls_file = os.path.join(directory, "urls.json")
    if os.path.exists(urls_file):
        with open(urls_file) as fh:
            return directory, json.load(fh)
    names, urls = urls_of(rng, hosts, lines)
    cdx = []
    for url in urls:
        for _ in range(rng.randint(1, 4)):
            stamp = f"20{rng.randint(10, 24):02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(0, 235959):06d}"
            record = {"url": url, "mime": "text/html", "status": "200", "digest": f"{rng.getrandbits(64):016X}",
                      "length": str(rng.randint(300, 90000)), "offset": str(rng.randint(0, 10**9)),
                      "filename": f"crawl/CC-{rng.randint(0, 99):05d}.warc.gz"}
            cdx.append(f"{url_key(url)} {stamp} {json.dumps(record)}\n".encode())
    cdx.sort()
    splits = [cdx[len(cdx) * i // 4] for i in range(1, 4)]
    write_cluster(cdx, directory, splits, lines_per_block=3000)
    with open(urls_file, "w") as fh:
        json.dump({"hosts": names, "urls": urls}, fh)
    return directory, {"hosts": names, "urls": urls}


def make_rules(rng, urls, count, path):
    rules = set()
    while len(rules) < count:
        key = url_key(rng.choice(urls))
        kind = rng.random()
        if kind < 0.3:
            key = key.split(")", 1)[0] + ")"           # a host
        elif kind < 0.8:
            key = key[:rng.randint(len(key.split(")", 1)[0]) + 1, len(key))]  # a path prefix
        else:
            key += "###"                                 # an exact URL
        fields = {"access": rng.choice(["allow", "block", "exclude"])}
        if rng.random() < 0.25:
            fields["user"] = "staff"
        rules.add(f"{key} - {json.dumps(fields)}")
    with open(path, "w") as fh:
        fh.writelines(line + "\n" for line in sorted(rules, reverse=True))


def lookups(rng, data, count):
    mix = []
    for _ in range(count):
        pick = rng.random()
        url = rng.choice(data["urls"])
        if pick < 0.7:
            mix.append({"url": url})
        elif pick < 0.85:
            mix.append({"url": url.rsplit("/", 1)[0] + "/*", "limit": 100})
        else:
            mix.append({"url": "*." + rng.choice(data["hosts"]), "limit": 100})
    return [CdxRequest(output="json", **params) for params in mix]


def run(collection, requests):
    started = time.perf_counter()
    lines = 0
    for request in requests:
        for chunk in collection.answer(request)[1]:
            lines += chunk.count(b"\n")
    return time.perf_counter() - started, lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--rules", type=int, default=3000)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.lines, args.hosts, args.lookups, args.repeat = 60_000, 500, 500, 3
    rng = random.Random(1)
    os.makedirs(OUT, exist_ok=True)
    directory, data = make_cluster(rng, args.hosts, args.lines)
    rules_path = os.path.join(OUT, f"rules-{args.rules}.aclj")
    make_rules(rng, data["urls"], args.rules, rules_path)
    cache = BlockCache(64 * 1024 * 1024)
    cluster = open_cluster(directory, cache=cache)
    plain = Collection("bench", [cluster])
    ruled = Collection("bench", [cluster], Access([rules_path]))
    requests = lookups(rng, data, args.lookups)
    run(plain, requests)  # warm the cache
    without, with_rules = [], []
    for _ in range(args.repeat):
        without.append(run(plain, requests))
        with_rules.append(run(ruled, requests))
    best_without, best_with = min(t for t, _ in without), min(t for t, _ in with_rules)
    ratio = best_with / best_without
    checker = ruled.access.checker()
    lines = list(cluster.lookup_range(b"", b"\xff"))
    started = time.perf_counter()
    kept = sum(1 for line in lines if checker(line) is not None)
    decisions = len(lines) / (time.perf_counter() - started)
    result = {"lines": len(lines), "rules": args.rules, "lookups": args.lookups,
              "seconds_without": round(best_without, 4), "seconds_with": round(best_with, 4),
              "ratio": round(ratio, 3), "lines_answered_without": without[0][1],
              "lines_answered_with": with_rules[0][1], "decisions_per_second": round(decisions),
              "lines_kept": kept}
    print(f"{args.lookups} lookups over {len(lines)} lines: {best_without * 1000:.0f} ms without rules, "
          f"{best_with * 1000:.0f} ms with {args.rules} rules: {ratio:.2f}x (target <= 1.2x)")
    print(f"the rules alone: {decisions:,.0f} decisions/s over every line ({kept} of {len(lines)} not excluded)")
    with open(os.path.join(OUT, "results.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    return 0 if ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
