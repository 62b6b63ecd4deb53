"""Failures of the environment, as a user meets them (issue 16, item 12): a full disk, a
read-only output, an output that is a file, S3 without credentials or answering 503 to
everything, a regular expression too big to compile. Each is one line saying what and
how to fix it, with exit status 1 (2 only for bad usage), and no traceback."""
import contextlib
import errno
import logging
import os
import subprocess

import pytest
from botocore.retries.adaptive import ClientRateLimiter
from botocore.retries.standard import ExponentialBackoff

import faultproxy
import s3server
from helpers import REAL
from webarchive_indexing import cli, storage
from webarchive_indexing.util import retry
from webarchive_indexing.storage import local as local_storage
from webarchive_indexing.storage import s3 as s3_storage

ARCHIVES = [f"{REAL}/webrecorder+warcio__example.warc.gz",
            f"{REAL}/iipc+webarchive-commons__IAH-urls-wget.warc.gz"]


def failed_in_a_line(capsys, code, expected=cli.EXIT_FAILED):
    """The one line of stderr that is not progress, checked."""
    err = capsys.readouterr().err
    # steps ("[1/3] ...") and their phases (indented: the local engine's) are progress
    said = [line for line in err.splitlines() if line and not line.startswith(("[", "  "))]
    assert code == expected and len(said) == 1 and "Traceback" not in err, err[-3000:]
    return said[0]


@contextlib.contextmanager
def mounted(directory, options):
    """A tmpfs mounted at ``directory`` (as root, where mounting is allowed), or a skip."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


# -- full disks ------------------------------------------------------------------------------

@pytest.mark.parametrize("runner", ["inline", "local"])
@pytest.mark.parametrize("size", ["8k", "40k"], ids=["while-indexing", "while-writing-shards"])
def test_a_full_disk(tmp_path, capsys, runner, size):
    with mounted(tmp_path / "small", f"size={size}") as small:
        code = cli.main(["build", *ARCHIVES, "-o", str(small / "out"), "--runner", runner])
        line = failed_in_a_line(capsys, code)
    assert line == (f"webarchive-index build: {small / 'out'}: No space left on device "
                    "(free some space, or write elsewhere)")


def test_a_full_disk_injected(tmp_path, capsys, monkeypatch):
    """Where no small file system can be mounted: the disk fills as the first shard is written."""
    open_atomic = local_storage.open_atomic

    @contextlib.contextmanager
    def full(path):
        if "/cluster/build-" not in path:
            with open_atomic(path) as fh:
                yield fh
            return
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        yield

    monkeypatch.setattr(local_storage, "open_atomic", full)
    out = tmp_path / "out"
    code = cli.main(["build", *ARCHIVES, "-o", str(out), "--runner", "inline"])
    assert failed_in_a_line(capsys, code) == (f"webarchive-index build: {out}: No space left on "
                                              "device (free some space, or write elsewhere)")
    assert not (out / "cluster" / "cluster.idx").exists()


# -- outputs that cannot be written -------------------------------------------------------

def test_a_read_only_output(tmp_path, capsys):
    out = tmp_path / "ro"
    if os.geteuid() == 0:  # root writes through permissions: a read-only file system
        context = mounted(out, "size=1m,ro")
        reason = "Read-only file system (write elsewhere)"
    else:
        out.mkdir()
        out.chmod(0o555)
        context = contextlib.nullcontext(out)
        reason = "Permission denied (check the permissions, or write elsewhere)"
    with context:
        for command in (["build", *ARCHIVES, "-o", str(out / "x"), "--runner", "inline"],
                        ["cdx", *ARCHIVES, "-o", str(out / "x")],
                        ["corpus", "--out", str(out / "x")]):
            line = failed_in_a_line(capsys, cli.main(command))
            assert line.endswith(reason) and str(out / "x") in line, line


def test_an_output_that_is_a_file(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    for out, reason in ((afile, "File exists"), (afile / "below", "Not a directory")):
        for command in (["build", *ARCHIVES, "-o", str(out), "--runner", "inline"],
                        ["cdx", ARCHIVES[0], "-o", str(out)]):
            assert failed_in_a_line(capsys, cli.main(command)) == (
                f"webarchive-index {command[0]}: {out}: {reason} (a file is where a directory "
                "must be: remove it, or write elsewhere)")
    assert afile.read_text() == "not a directory"


@pytest.mark.parametrize("runner", ["mrjob", "local"])
def test_a_task_of_the_local_runner_that_fails_is_reported_as_it_failed(tmp_path, capsys, runner):
    """mrjob's local runner and the local engine run their tasks in processes of their own:
    what one raised is reported as a line (here: cdx/ is a file, where the index task
    first removes the record of what a CDX file was made from)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "cdx").write_text("in the way")
    code = cli.main(["build", *ARCHIVES, "-o", str(out), "--runner", runner])
    assert failed_in_a_line(capsys, code) == (
        f"webarchive-index build: {out / 'cdx' / 'webrecorder+warcio__example.cdx.gz.meta.json'}: "
        "Not a directory (a file is where a directory must be: remove it, or write elsewhere)")


# -- S3 ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def s3():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with s3server.running() as endpoint:
        bucket = s3server.new_bucket()
        for path in ARCHIVES:
            storage.write_atomic(f"{bucket}/crawl/{os.path.basename(path)}", open(path, "rb").read())
        yield {"endpoint": endpoint, "bucket": bucket}


def test_s3_without_credentials(s3, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    s3_storage._client.cache_clear()
    try:
        for command in (["build", s3["bucket"] + "/crawl/", "-o", str(tmp_path / "out"),
                         "--runner", "inline"],
                        ["build", *ARCHIVES, "-o", s3["bucket"] + "/out", "--runner", "inline"],
                        ["query", s3["bucket"] + "/out", "example.com"]):
            line = failed_in_a_line(capsys, cli.main(command))
            assert "Unable to locate credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" \
                in line and s3["bucket"] in line, line
    finally:
        s3_storage._client.cache_clear()


@pytest.fixture
def storm(s3, monkeypatch):
    """Every GET and every other request answered 503 SlowDown, retried without waiting."""
    monkeypatch.setattr(retry.READS, "first", 0.001)
    monkeypatch.setattr(retry.READS, "cap", 0.005)
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.001)
    monkeypatch.setattr(ClientRateLimiter, "on_sending_request", lambda self, **kwargs: None)
    with faultproxy.running(s3["endpoint"], seed=5, methods=("GET", "HEAD", "PUT", "POST")) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        s3_storage._client.cache_clear()
        proxy.set_faults(p_503=1.0)
        try:
            yield proxy
        finally:
            s3_storage._client.cache_clear()


def test_a_503_storm_fails_with_status_1_not_2(s3, storm, tmp_path, capsys):
    for command in (["build", s3["bucket"] + "/crawl/", "-o", str(tmp_path / "out"), "--runner",
                     "inline"],
                    ["query", s3["bucket"] + "/out", "example.com"]):
        line = failed_in_a_line(capsys, cli.main(command))
        assert "SlowDown" in line and s3["bucket"] in line, line
    assert storm.requests


# -- a regular expression that cannot be compiled --------------------------------------------

def test_a_regex_too_big_to_compile(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["build", ARCHIVES[0], "-o", str(out), "--runner", "inline"]) == 0
    capsys.readouterr()
    for regex in ("a{99999999999}", "(", "a{2,1}"):
        line = failed_in_a_line(capsys, cli.main(["query", str(out), "example.com", "--filter",
                                                  f"~url:{regex}"]), cli.EXIT_USAGE)
        assert line.startswith(f"webarchive-index query: --filter: bad regular expression in filter "
                               f"'~url:{regex}': "), line
