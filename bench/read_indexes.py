"""Benchmark reading index inputs (``inputs.indexes``): CPU time per line against the floor.

Usage (from the project root; plain `python` re-runs itself with .venv/bin/python):

    python bench/read_indexes.py                  # 1,000,000 CDXJ lines in 8 .cdxj.gz files
    python bench/read_indexes.py --lines 200000 --files 4 --repeat 3

Generates sorted gzipped CDXJ files shaped like Common Crawl's (cached in
bench/out/indexes/<parameters>/), reads them page-cache-warm, and reports the best CPU
time (``time.process_time``, of this process; the machine is shared, so CPU time is
steadier than wall time) of each way of reading, in one run:

* floor      inflate every file (isal) and split it into lines: what any reader pays
* chunks     ``open_index(path).chunks()``: lists of checked lines (the engines' API)
* lines      ``open_index(path).lines()``: the same, one line at a time

with microseconds per line and each as a multiple of the floor; ``--json`` prints them
as JSON too.
"""
import argparse
import gzip
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
if os.path.exists(PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(PYTHON) \
        and sys.prefix == sys.base_prefix:
    os.execv(PYTHON, [PYTHON, *sys.argv])
sys.path.insert(0, ROOT)

OUT = os.path.join(ROOT, "bench", "out", "indexes")


def make_files(lines, files):
    """``files`` sorted .cdxj.gz files of ``lines`` lines in all (made once, then cached)."""
    directory = os.path.join(OUT, f"l{lines}-f{files}")
    paths = [os.path.join(directory, f"cdx-{i:05d}.cdxj.gz") for i in range(files)]
    if all(os.path.exists(p) for p in paths):
        return paths
    os.makedirs(directory, exist_ok=True)
    per_file = lines // files
    for number, path in enumerate(paths):
        with gzip.open(path + ".tmp", "wt", encoding="utf-8", compresslevel=6) as out:
            for i in range(number * per_file, (number + 1) * per_file):
                host, page = divmod(i, 40)
                out.write(
                    f"com,example{host:07d})/path/{page:03d}?q={i} 2024{i % 12 + 1:02d}15103000 "
                    f'{{"url": "https://www.example{host:07d}.com/path/{page:03d}?q={i}", '
                    f'"mime": "text/html", "mime-detected": "text/html", "status": "200", '
                    f'"digest": "SHA1{i:028d}", "length": "{1000 + i % 9000}", '
                    f'"offset": "{i * 1234}", "filename": "crawl-data/CC-MAIN-2024-10/segments/'
                    f'1707947473347.0/warc/CC-MAIN-20240220211055-20240221001055-{number:05d}'
                    f'.warc.gz"}}\n')
        os.replace(path + ".tmp", path)
    return paths


def floor(paths):
    from isal import igzip
    count = 0
    for path in paths:
        with igzip.open(path, "rb") as fh:
            rest = b""
            while True:
                data = fh.read(1 << 18)
                if not data:
                    break
                lines = (rest + data).split(b"\n")
                rest = lines.pop()
                count += len(lines)
    return count


def chunks(paths):
    from webarchive_indexing.inputs.sources import open_index
    return sum(len(chunk) for path in paths for chunk in open_index(path).chunks())


def lines(paths):
    from webarchive_indexing.inputs.sources import open_index
    return sum(1 for path in paths for _ in open_index(path).lines())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action=argparse.BooleanOptionalAction, default=False,
                        help="print the results as JSON too")
    args = parser.parse_args(argv)
    paths = make_files(args.lines, args.files)
    ways = [("floor", floor), ("chunks", chunks), ("lines", lines)]
    best = {}
    for _ in range(args.repeat):
        for name, way in ways:  # interleaved, so that a busy moment hits all alike
            started = time.process_time()
            count = way(paths)
            seconds = time.process_time() - started
            if count != args.lines // args.files * args.files:
                sys.exit(f"{name} read {count} lines, not {args.lines}")
            best[name] = min(best.get(name, seconds), seconds)
    print(f"{args.lines} CDXJ lines in {args.files} files; best CPU time of {args.repeat}")
    for name, _ in ways:
        print(f"{name:8} {best[name]:7.2f} s  {best[name] / args.lines * 1e6:5.2f} us/line  "
              f"{best[name] / best['floor']:5.2f}x floor")
    if args.json:
        print(json.dumps({"lines": args.lines, "files": args.files, "cpu_seconds": best}))


if __name__ == "__main__":
    main()
