"""An EMR, S3, EC2 and IAM stand-in on 127.0.0.1 for mrjob's EMR runner: moto 5.2.5 in
server mode, in a thread of the test process, that records every request it answers.

    with MotoEMR() as aws:                    # aws.endpoint == "http://127.0.0.1:PORT"
        ...run a job with -r emr --s3-endpoint aws.endpoint --emr-endpoint ... --no-read-logs
        aws.requests.emr_calls("RunJobFlow")  # the JSON bodies mrjob sent
        aws.requests.s3_puts()                # {"s3://bucket/key": body} of every upload

Stock moto 5.2.5 stops mrjob in two places, fixed here by patching moto's EMR models
while the server runs (undone on exit):

* a cluster created without ``Applications`` gets a default application whose name moto
  reads from the wrong key (``"name"``, not ``"Name"``): DescribeCluster then lists an
  application without ``Name`` and mrjob fails with KeyError('Name'). Applications given
  with ``Name``/``Version`` keys are taken as they are; Hadoop without a version gets the
  one EMR reports for the release label (real EMR always does: mrjob needs it, e.g. for
  the ``mapreduce.job.reduces=0`` of a map-only job, else TypeError in translate_jobconf).
* steps never finish: moto starts the first step as RUNNING and leaves it there (and a
  cluster created without steps terminates at once). Here a cluster goes STARTING ->
  BOOTSTRAPPING -> RUNNING, and then each step PENDING -> RUNNING -> COMPLETED, one
  transition for each DescribeStep call; when no step is left the cluster terminates
  ("Steps completed") unless it is kept alive (then WAITING).

Nothing runs on this "cluster": it proves what mrjob uploads and asks EMR to do, not
that a job works on EMR.

``network_guard(dir, log)`` writes a ``sitecustomize.py`` that, in any Python started
with ``dir`` on PYTHONPATH, refuses (and logs) connections and name lookups of hosts
other than 127.0.0.1/localhost.
"""
import contextlib
import io
import json
import logging
import os
import threading
import urllib.parse

import moto.emr.models as emr_models
from moto.core.utils import utcnow
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import (DomainDispatcherApplication, MotoRequestHandler,
                                           create_backend_app)
from werkzeug.serving import make_server

# what clients must use: no real account, no profile, no instance metadata, no proxy
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "NO_PROXY": "*",
    "no_proxy": "*",
}
UNSET_ENV = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ROLE_ARN",
             "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
             "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_ENDPOINT_URL",
             "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")


def client_env(base=None):
    """``base`` (default os.environ) with fake credentials and nothing that leads elsewhere."""
    env = dict(os.environ if base is None else base)
    for name in UNSET_ENV:
        env.pop(name, None)
    env.update(FAKE_AWS_ENV)
    return env


# -- the moto fixes ------------------------------------------------------------------------

# the Hadoop version DescribeCluster reports for a release (EMR 6.0-6.15: 3.2.1 to 3.3.6;
# EMR 7.0-7.5: 3.3.6): mrjob needs one to translate jobconf names
_HADOOP_VERSIONS = {"emr-6": "3.2.1", "emr-7": "3.3.6"}


def _add_applications(self, applications):
    def version(app):
        given = app.get("version") or app.get("Version")
        name = (app.get("name") or app.get("Name") or "").lower()
        if given or name != "hadoop":
            return given or ""
        return _HADOOP_VERSIONS.get((self.release_label or "").rsplit(".", 2)[0], "3.3.6")

    self.applications.extend(
        emr_models.Application(name=app.get("name") or app.get("Name") or "",
                               version=version(app),
                               args=app.get("args") or app.get("Args") or [],
                               additional_info=app.get("additional_info")
                               or app.get("AdditionalInfo") or {})
        for app in applications)


def _run_bootstrap_actions(self):
    # stay STARTING: the lifecycle below moves on as the client polls
    self.ready_datetime = None


def _add_steps(self, steps):
    added = [emr_models.Step(state="PENDING", **step) for step in steps]
    self.steps.extend(added)
    return added


def _tick(cluster):
    """One state transition of ``cluster`` and its steps."""
    if cluster.state == "STARTING":
        cluster.state = "BOOTSTRAPPING"
        return
    if cluster.state == "BOOTSTRAPPING":
        cluster.state = "RUNNING"
        cluster.ready_datetime = utcnow()
        return
    if cluster.state not in ("RUNNING", "WAITING"):
        return
    running = [s for s in cluster.steps if s.state == "RUNNING"]
    pending = [s for s in cluster.steps if s.state == "PENDING"]
    if running:
        running[0].state = "COMPLETED"
        running[0].end_date_time = utcnow()
    elif pending:
        cluster.state = "RUNNING"
        pending[0].state = "RUNNING"
        pending[0].start()
    else:
        if cluster.keep_job_flow_alive_when_no_steps:
            cluster.state = "WAITING"
        else:
            cluster.last_state_change_reason = "Steps completed"
            cluster.terminate()


def _describe_step(original):
    def describe_step(self, cluster_id, step_id):
        _tick(self.clusters[cluster_id])
        return original(self, cluster_id, step_id)
    return describe_step


@contextlib.contextmanager
def _patched_moto():
    patches = [(emr_models.Cluster, "add_applications", _add_applications),
               (emr_models.Cluster, "run_bootstrap_actions", _run_bootstrap_actions),
               (emr_models.Cluster, "add_steps", _add_steps),
               (emr_models.ElasticMapReduceBackend, "describe_step",
                _describe_step(emr_models.ElasticMapReduceBackend.describe_step))]
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


# -- the recording server ------------------------------------------------------------------

def _service_of(environ):
    auth = environ.get("HTTP_AUTHORIZATION", "")
    if "Credential=" in auth:
        # Credential=KEY/DATE/REGION/SERVICE/aws4_request
        return auth.split("Credential=", 1)[1].split(",", 1)[0].split("/")[3]
    return None


def _decode_aws_chunked(body):
    """The payload of an ``aws-chunked`` body (botocore's streaming uploads)."""
    out, rest = io.BytesIO(), body
    while rest:
        header, _, rest = rest.partition(b"\r\n")
        size = int(header.split(b";", 1)[0], 16)
        if size == 0:
            break
        out.write(rest[:size])
        rest = rest[size + 2:]
    return out.getvalue()


class _Recorder:
    def __init__(self, app, requests):
        self.app, self.requests, self.lock = app, requests, threading.Lock()

    def __call__(self, environ, start_response):
        stream = environ["wsgi.input"]
        length = environ.get("CONTENT_LENGTH")
        if length:
            body = stream.read(int(length))
        elif environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
            body = stream.read()  # werkzeug de-chunks it and ends it
        else:
            body = b""
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        payload = body
        if "aws-chunked" in environ.get("HTTP_CONTENT_ENCODING", "") or \
                environ.get("HTTP_X_AMZ_CONTENT_SHA256", "").startswith("STREAMING-"):
            payload = _decode_aws_chunked(body)
        record = {"service": _service_of(environ), "method": environ["REQUEST_METHOD"],
                  "host": environ.get("HTTP_HOST"), "path": urllib.parse.unquote(environ.get("PATH_INFO", "")),
                  "query": environ.get("QUERY_STRING", ""),
                  "target": environ.get("HTTP_X_AMZ_TARGET", ""), "body": payload}
        with self.lock:
            self.requests.append(record)
        return self.app(environ, start_response)


class _RecordingServer(ThreadedMotoServer):
    def __init__(self, requests):
        super().__init__(ip_address="127.0.0.1", port=0, verbose=False)
        self.requests = requests

    def _server_entry(self):
        app = _Recorder(DomainDispatcherApplication(create_backend_app), self.requests)
        self._server = make_server(self._ip_address, self._port, app, True,
                                   request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()


class Requests(list):
    """The requests the server answered (dicts: service, method, host, path, query, target,
    body), and what they sent."""

    def emr_calls(self, action=None):
        """(action, JSON body) of every EMR API call, in order; only ``action`` if given."""
        calls = [(r["target"].split(".", 1)[-1], json.loads(r["body"] or b"{}"))
                 for r in self if r["service"] == "elasticmapreduce"]
        return [body for name, body in calls if name == action] if action else calls

    def s3_requests(self):
        return [r for r in self if r["service"] == "s3"]

    def s3_puts(self):
        """``{"s3://bucket/key": body}`` of every object uploaded (multipart parts joined)."""
        puts, parts = {}, {}
        for r in self.s3_requests():
            query = urllib.parse.parse_qs(r["query"], keep_blank_values=True)
            uri = "s3:/" + r["path"]
            if r["method"] == "PUT" and "partNumber" in query:
                parts.setdefault(uri, {})[int(query["partNumber"][0])] = r["body"]
            elif r["method"] == "PUT" and not query and r["path"].count("/") >= 2:
                puts[uri] = r["body"]
            elif r["method"] == "POST" and "uploadId" in query:
                puts[uri] = b"".join(body for _, body in sorted(parts.pop(uri, {}).items()))
        return puts

    def s3_deletes(self):
        """Keys removed, with DeleteObject or DeleteObjects."""
        deleted = []
        for r in self.s3_requests():
            query = urllib.parse.parse_qs(r["query"], keep_blank_values=True)
            if r["method"] == "DELETE" and not query:
                deleted.append("s3:/" + r["path"])
            elif r["method"] == "POST" and "delete" in query:
                bucket = r["path"].strip("/").split("/")[0]
                body = r["body"].decode()
                deleted += [f"s3://{bucket}/" + part.split("</Key>")[0]
                            for part in body.split("<Key>")[1:]]
        return deleted


class MotoEMR:
    def __init__(self):
        self.requests = Requests()
        self._server = _RecordingServer(self.requests)
        self._patches = _patched_moto()
        self.endpoint = None

    def __enter__(self):
        # the server's access log (one line a request) is noise in test output
        self._werkzeug_level = logging.getLogger("werkzeug").level
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._patches.__enter__()
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        return self

    def __exit__(self, *exc):
        self._server.stop()
        self._patches.__exit__(*exc)
        logging.getLogger("werkzeug").setLevel(self._werkzeug_level)

    def mrjob_args(self, check_every="0.2"):
        """The mrjob switches that point its EMR runner here."""
        return ["--region", "us-east-1", "--s3-endpoint", self.endpoint,
                "--emr-endpoint", self.endpoint, "--ec2-endpoint", self.endpoint,
                "--iam-endpoint", self.endpoint, "--no-read-logs",
                "--check-cluster-every", check_every, "--cloud-fs-sync-secs", "0"]

    def client(self, service):
        import boto3
        env = client_env()
        return boto3.client(service, endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])

    def clusters(self):
        from moto.core import DEFAULT_ACCOUNT_ID
        return emr_models.emr_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].clusters


NETWORK_GUARD = '''\
"""Refuse and log network access to anything but this machine (written by tests/emr_moto.py)."""
import os
import socket

_LOG = os.environ.get("NETWORK_GUARD_LOG")
_LOCAL = {"127.0.0.1", "::1", "localhost", "", None}


def _refuse(what):
    if _LOG:
        with open(_LOG, "a") as fh:
            fh.write(f"{os.getpid()} {what}\\n")
    raise OSError(f"network guard: {what} refused (tests allow 127.0.0.1 only)")


def _host(address):
    return address[0] if isinstance(address, tuple) else None


_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex
_getaddrinfo = socket.getaddrinfo


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and _host(address) not in _LOCAL:
        _refuse(f"connect {address!r}")
    return _connect(self, address)


def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and _host(address) not in _LOCAL:
        _refuse(f"connect {address!r}")
    return _connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    name = host.decode() if isinstance(host, bytes) else host
    if name not in _LOCAL:
        _refuse(f"lookup {name!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
'''


def network_guard(directory, log_path):
    """Write the guard into ``directory``; return the environment that turns it on."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "sitecustomize.py"), "w") as fh:
        fh.write(NETWORK_GUARD)
    return {"PYTHONPATH": str(directory), "NETWORK_GUARD_LOG": str(log_path)}
