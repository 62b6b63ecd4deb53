"""``webarchive-index wacz``: WACZ packages checked by the real readers: py-wacz's own
validator, py-wacz's index of the same WARCs, and ReplayWeb.page in headless Chromium."""
import gzip
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import pytest

import rangeserver
from webarchive_indexing import cli
from webarchive_indexing.commands.corpus import make_corpus

REPO = Path(__file__).resolve().parent.parent
# the sample archives of `make demo` (samples/README.md says where each comes from)
REAL = REPO / "samples"
BIN = Path(sys.executable).parent
SAMPLES = ["example.warc.gz", "CC-MAIN-2020-34-excerpt.warc.gz", "CC-MAIN-2024-22-whirlwind.warc.gz"]


def warcs(tmp_path, names=SAMPLES):
    directory = tmp_path / "warcs"
    directory.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(os.path.join(REAL, name), directory / name)
    return [str(directory / name) for name in names]


def pack(tmp_path, inputs, name="ours.wacz", *more):
    out = tmp_path / name
    assert cli.main(["wacz", *inputs, "-o", str(out), "--no-progress", *more]) == cli.EXIT_OK
    return out


def py_wacz(*args):
    return subprocess.run([str(BIN / "wacz"), *args], capture_output=True, text=True, timeout=300)


def index_lines(package):
    """The CDXJ lines of a package's compressed index, read block by block as its
    ``index.idx`` says (each block checked against its digest)."""
    with zipfile.ZipFile(package) as zf:
        idx = zf.read("indexes/index.idx").decode().splitlines()
        data = zf.read("indexes/index.cdx.gz")
    assert json.loads(idx[0].split(" ", 2)[2]) == {"format": "cdxj-gzip-1.0",
                                                   "filename": "index.cdx.gz"}
    lines = []
    for entry in idx[1:]:
        key, ts, block = entry.split(" ", 2)
        block = json.loads(block)
        member = data[block["offset"]:block["offset"] + block["length"]]
        assert block["digest"] == "sha256:" + hashlib.sha256(member).hexdigest()
        inflater = zlib.decompressobj(31)
        text = inflater.decompress(member).decode()
        assert inflater.eof and not inflater.unused_data  # one whole gzip member
        assert text.startswith(f"{key} {ts} ")
        lines += text.splitlines()
    assert b"".join(gzip.decompress(data).splitlines(keepends=True)).decode().splitlines() == lines
    return lines


def test_our_package_passes_py_wacz_validation(tmp_path):
    out = pack(tmp_path, warcs(tmp_path), "ours.wacz", "--title", "Samples")
    done = py_wacz("validate", "-f", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation succeeded" in done.stdout
    with zipfile.ZipFile(out) as zf:
        infos = {info.filename: info for info in zf.infolist()}
        package = json.loads(zf.read("datapackage.json"))
        digest = json.loads(zf.read("datapackage-digest.json"))
        assert digest["hash"] == "sha256:" + hashlib.sha256(zf.read("datapackage.json")).hexdigest()
        for name in SAMPLES:
            # stored as they are: a record is a byte range of the package
            assert infos["archive/" + name].compress_type == zipfile.ZIP_STORED
            assert zf.read("archive/" + name) == Path(REAL, name).read_bytes()
        assert infos["indexes/index.cdx.gz"].compress_type == zipfile.ZIP_STORED
        resources = {r["path"]: r for r in package["resources"]}
        assert set(resources) == set(infos) - {"datapackage.json", "datapackage-digest.json"}
        for path, entry in resources.items():
            assert entry["hash"] == "sha256:" + hashlib.sha256(zf.read(path)).hexdigest()
            assert entry["bytes"] == infos[path].file_size
    assert package["wacz_version"] == "1.1.1" and package["title"] == "Samples"


def test_a_damaged_package_fails_py_wacz_validation(tmp_path):
    """The check above can fail: a package whose WARC changed after its datapackage."""
    out = pack(tmp_path, warcs(tmp_path))
    bad = tmp_path / "bad.wacz"
    with zipfile.ZipFile(out) as old, zipfile.ZipFile(bad, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename == "archive/example.warc.gz":
                data = data[:-1] + bytes([data[-1] ^ 1])
            new.writestr(info, data)
    done = py_wacz("validate", "-f", str(bad))
    assert "Validation succeeded" not in done.stdout


def test_our_index_has_the_lines_py_wacz_indexes(tmp_path):
    """py-wacz's index of the same WARCs (cdxj-indexer's lines) and ours name the same
    records: key, time, URL, offset, length and file (py-wacz adds fields of its own)."""
    inputs = warcs(tmp_path)
    ours = pack(tmp_path, inputs)
    theirs = tmp_path / "theirs.wacz"
    done = py_wacz("create", "-o", str(theirs), *inputs)
    assert done.returncode == 0, done.stderr

    def records(lines):
        found = []
        for line in lines:
            key, ts, fields = line.split(" ", 2)
            fields = json.loads(fields)
            found.append((key, ts, fields["url"], int(fields["offset"]), int(fields["length"]),
                          fields["filename"], fields.get("mime")))
        return found

    mine = records(index_lines(ours))
    assert mine == sorted(mine) and len(mine) > 10
    assert sorted(mine) == sorted(records(index_lines(theirs)))


def test_blocks_pages_and_lines_per_block(tmp_path):
    out = pack(tmp_path, warcs(tmp_path), "ours.wacz", "--lines-per-block", "4")
    lines = index_lines(out)
    with zipfile.ZipFile(out) as zf:
        idx = zf.read("indexes/index.idx").decode().splitlines()
        pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").decode().splitlines()]
    assert len(idx) - 1 == -(-len(lines) // 4)
    assert pages[0] == {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    html = {}
    for line in lines:
        key, ts, fields = line.split(" ", 2)
        fields = json.loads(fields)
        if fields.get("mime") == "text/html" and fields.get("status", "").startswith("2"):
            html.setdefault(key, (fields["url"], ts))
    assert [(p["url"], p["ts"]) for p in pages[1:]] == [
        (url, f"{ts[:4]}-{ts[4:6]}-{ts[6:8]}T{ts[8:10]}:{ts[10:12]}:{ts[12:14]}Z")
        for url, ts in html.values()]
    assert len({p["id"] for p in pages[1:]}) == len(pages) - 1


@pytest.mark.parametrize("name, says", [
    ("example-arc.arc.gz", "a WACZ holds WARC files"),
])
def test_what_a_wacz_cannot_hold_is_refused_and_nothing_is_written(tmp_path, capsys, name, says):
    inputs = warcs(tmp_path, ["example.warc.gz", name])
    out = tmp_path / "out.wacz"
    assert cli.main(["wacz", *inputs, "-o", str(out), "--no-progress"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert says in err and name in err and "Traceback" not in err
    assert not out.exists() and not list(tmp_path.glob(".wacz-*"))


def test_an_output_that_is_no_wacz_name_is_refused(tmp_path, capsys):
    inputs = warcs(tmp_path, ["example.warc.gz"])
    assert cli.main(["wacz", *inputs, "-o", str(tmp_path / "out.zip")]) == cli.EXIT_USAGE
    assert "ends in .wacz" in capsys.readouterr().err


def test_a_damaged_archive_fails_and_leaves_nothing(tmp_path, capsys):
    inputs = warcs(tmp_path, ["example.warc.gz"])
    damaged = tmp_path / "warcs" / "damaged.warc.gz"
    data = Path(REAL, "example.warc.gz").read_bytes()
    damaged.write_bytes(data[:900] + b"\x00" * 64 + data[964:])
    out = tmp_path / "out.wacz"
    status = cli.main(["wacz", *inputs, str(damaged), "-o", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert status == cli.EXIT_FAILED and "damaged.warc.gz" in err and "nothing was written" in err
    assert not out.exists() and not list(tmp_path.glob(".wacz-*"))
    # with --on-error skip the package is written, and the problem reported
    status = cli.main(["wacz", *inputs, str(damaged), "-o", str(out), "--no-progress",
                       "--on-error", "skip"])
    assert status == cli.EXIT_PARTIAL and "damaged.warc.gz" in capsys.readouterr().err
    # every record read stays replayable: the damaged WARC goes in whole, its readable
    # records indexed (py-wacz's validator then stops at the WARC's bad gzip data)
    with zipfile.ZipFile(out) as zf:
        assert zf.read("archive/damaged.warc.gz") == damaged.read_bytes()
    assert any('"filename": "damaged.warc.gz"' in line for line in index_lines(out))


def test_memory_stays_flat_whatever_the_size_of_the_warcs(tmp_path):
    """A package of ~25 MB of WARCs in a process whose peak memory is that of one of ~1 MB,
    give or take 40 MB (a WARC is copied in pieces, the index streamed)."""
    peaks = {}
    for size, files, captures in (("small", 1, 30), ("large", 2, 600)):
        corpus = tmp_path / size
        make_corpus(str(corpus), files=files, captures=captures, seed=3, mean_kb=64)
        script = (f"import resource, sys\nfrom webarchive_indexing import cli\n"
                  f"status = cli.main(['wacz', {str(corpus)!r}, '-o', "
                  f"{str(tmp_path / (size + '.wacz'))!r}, '--no-progress', '--workers', '1'])\n"
                  "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(status)\n")
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        peaks[size] = int(done.stdout.split()[-1]) // 1024
    warc_bytes = sum(f.stat().st_size for f in (tmp_path / "large").rglob("*.warc.gz"))
    assert warc_bytes > 5 * sum(f.stat().st_size for f in (tmp_path / "small").rglob("*.warc.gz"))
    assert peaks["large"] < peaks["small"] + 40, peaks


# -- ReplayWeb.page, in headless Chromium ------------------------------------------------------

FIND_FRAMES = """
const found = [];
function walk(root) {
  for (const el of root.querySelectorAll('*')) {
    if (el.tagName === 'IFRAME') found.push(el);
    if (el.shadowRoot) walk(el.shadowRoot);
  }
}
walk(document);
return found;"""

EMBED = """<!doctype html>
<html><head><script src="/ui.js"></script></head>
<body style="margin:0">
<replay-web-page style="display:block;width:1000px;height:700px" source="/{wacz}" url="{url}"
  embed="replayonly" replaybase="/replay/"></replay-web-page>
</body></html>
"""


@pytest.fixture(scope="module")
def replaywebpage():
    """ReplayWeb.page's ui.js and sw.js (scripts/replaywebpage/fetch.sh: npm, once)."""
    done = subprocess.run([str(REPO / "scripts/replaywebpage/fetch.sh")], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"ReplayWeb.page could not be fetched: {done.stderr}")
    return Path(done.stdout.strip())


def replayed(site, page, profile):
    """The text of the archived page ReplayWeb.page shows in ``page`` (found in its frames,
    inside its shadow roots), and a screenshot of it; the requests the viewer made."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    if not os.path.exists("/usr/bin/chromedriver"):
        if os.environ.get("CI"):
            pytest.fail("Debian's chromium and chromium-driver are missing: .ci/run installs them")
        pytest.skip("Debian's chromium-driver is not installed (.ci/run installs it)")
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--window-size=1000,700", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    with rangeserver.serving(str(site)) as server:
        browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            browser.get(f"{server.url}/{page}")
            # on a loaded machine the viewer's service worker can miss its first start and
            # leave the frame blank: a reader reloads, and so does this (twice at most)
            text, start = "", time.monotonic()
            reloads = [start + 40, start + 80]
            while time.monotonic() < start + 120:
                if reloads and time.monotonic() > reloads[0]:
                    reloads.pop(0)
                    browser.switch_to.default_content()
                    browser.refresh()
                browser.switch_to.default_content()
                frames = browser.execute_script(FIND_FRAMES)
                while frames:  # the innermost frame: the archived page
                    browser.switch_to.frame(frames[-1])
                    frames = browser.execute_script(FIND_FRAMES)
                text = browser.execute_script("return document.body ? document.body.innerText : ''")
                if text.strip():
                    break
                time.sleep(1)
            browser.switch_to.default_content()
            time.sleep(1)  # a last paint
            return text, browser.get_screenshot_as_png(), list(server.requests)
        finally:
            browser.quit()


def test_replaywebpage_replays_our_package_as_it_replays_py_waczs(tmp_path, monkeypatch,
                                                                    replaywebpage):
    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium-manager must not look online
    inputs = warcs(tmp_path, ["example.warc.gz"])
    site = tmp_path / "site"
    (site / "replay").mkdir(parents=True)
    shutil.copy(replaywebpage / "ui.js", site / "ui.js")
    shutil.copy(replaywebpage / "sw.js", site / "replay" / "sw.js")
    shutil.copy(pack(tmp_path, inputs), site / "ours.wacz")
    assert py_wacz("create", "-o", str(site / "theirs.wacz"), *inputs).returncode == 0
    shots, requests = {}, {}
    for name in ("ours", "theirs"):
        (site / f"{name}.html").write_text(EMBED.format(wacz=f"{name}.wacz", url="http://example.com/"))
        text, shots[name], requests[name] = replayed(site, f"{name}.html", tmp_path / f"profile-{name}")
        assert "This domain is established to be used for illustrative examples" in text, name
    assert shots["ours"] == shots["theirs"] and len(shots["ours"]) > 1000
    # the viewer found the record through our index: it read the block of index.cdx.gz
    with zipfile.ZipFile(site / "ours.wacz") as zf, open(site / "ours.wacz", "rb") as fh:
        info = zf.getinfo("indexes/index.cdx.gz")
        fh.seek(info.header_offset + 26)
        start = info.header_offset + 30 + sum(int.from_bytes(fh.read(2), "little") for _ in "ne")
    block = json.loads(zipfile.ZipFile(site / "ours.wacz").read("indexes/index.idx")
                       .decode().splitlines()[1].split(" ", 2)[2])
    wanted = (start + block["offset"], start + block["offset"] + block["length"] - 1)
    assert ("GET", "/ours.wacz", "bytes=%d-%d" % wanted) in requests["ours"]


def test_post_captures_are_keyed_as_replaywebpage_looks_them_up(tmp_path):
    """The index of a package has POST captures under their method and body (as py-wacz,
    with cdxj-indexer's post_append, keys them): ReplayWeb.page finds them so. (A chunked
    body without a Content-Length, which pywb does not read, is keyed as pywb keys it.)"""
    post = tmp_path / "warcs" / "post-test-more.warc"
    post.parent.mkdir()
    shutil.copy(REPO / "tests" / "data" / "real" / "webrecorder+cdxj-indexer__post-test-more.warc", post)
    keys = [line.split(" ", 1)[0] for line in index_lines(pack(tmp_path, [str(post)]))]
    theirs = tmp_path / "theirs.wacz"
    assert py_wacz("create", "-o", str(theirs), str(post)).returncode == 0
    posted = {key for key in keys if "__wb_method=post" in key}
    with_body = {key for key in posted if "__wb_method=post&" in key}
    assert len(with_body) == 2
    assert with_body <= {line.split(" ", 1)[0] for line in index_lines(theirs)}
