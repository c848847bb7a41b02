"""Object storage against local disk: the same realistic inventory built by the CLI with its output and work folder
on a local disk, then both on S3 (moto's server in its own process, over HTTP), alternating; each build's wall and
CPU time and, on S3, its requests by kind (HEAD, GET, LIST, PUT, POST, DELETE) and the bytes it wrote to the store and
read from it (request bodies, GET response bodies), in all and by kind of file.

Run from the repository root with the project and its dev extras installed: `python benchmarks/s3.py`
(`--sizes 1000000,10000000 --repeat 3` by default). Each build runs in its own process; the S3 server counts the
requests it answers (tests/servers.py's RecordingApp) and each build gets a bucket of its own, deleted after it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))  # the tests' S3 middleware and helpers for the processes of servers
sys.path.insert(0, str(HERE))

from run import generate_inventory, peak_rss_of  # noqa: E402

from tests.servers import free_port, wait_for  # noqa: E402

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
COUNTS_PATH = "/_bench/requests"  # the server's own path: the requests by kind since the last read


def serve(port: int) -> None:
    """moto's S3 server behind tests/servers.py's RecordingApp; GET COUNTS_PATH answers (and forgets) the
    requests it served, by kind."""
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import WSGIRequestHandler, make_server

    from tests.servers import RecordingApp

    recording = RecordingApp(DomainDispatcherApplication(create_backend_app))
    # bytes by direction (written: request bodies; read: GET response bodies) and kind of file (_file_kind)
    traffic = {"written": collections.Counter[str](), "read": collections.Counter[str]()}

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == COUNTS_PATH:
            with recording.lock:
                served, recording.requests[:] = list(recording.requests), []
                moved = {way: dict(found) for way, found in traffic.items()}
                for found in traffic.values():
                    found.clear()
            kinds: dict[str, Any] = collections.Counter(_kind(method, path) for method, path in served)
            for way, found in moved.items():
                kinds[f"bytes_{way}"] = sum(found.values())
                kinds[f"{way}_by_file"] = dict(sorted(found.items(), key=lambda item: -item[1]))
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(kinds).encode()]
        method, kind = environ["REQUEST_METHOD"], _file_kind(environ.get("PATH_INFO", ""))
        if method in ("PUT", "POST"):
            with recording.lock:
                traffic["written"][kind] += int(environ.get("CONTENT_LENGTH") or 0)

        def counted(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            if method == "GET":
                size = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
                with recording.lock:
                    traffic["read"][kind] += size
            return start_response(status, headers, *rest)

        return recording(environ, counted)

    WSGIRequestHandler.log_request = lambda *args, **kwargs: None  # type: ignore[method-assign]
    make_server("127.0.0.1", port, app, threaded=True).serve_forever()


def _file_kind(path: str) -> str:
    """What a request's file is, for the bytes by kind: its name with digests as H, the tags of the files sent
    between a stage's steps (<from>-<token>) as T, and numbers as N."""
    name = re.sub(r"\d{5}-[0-9a-f]{8}-", "T-", path.rsplit("/", 1)[-1])
    return re.sub(r"\d+", "N", re.sub(r"[0-9a-f]{12,}", "H", name))


def _kind(method: str, path: str) -> str:
    """A request's kind: its method, or LIST for a GET of a bucket (a listing)."""
    return "LIST" if method == "GET" and path.strip("/").count("/") == 0 else method


def _requests(endpoint: str) -> dict[str, int]:
    with urllib.request.urlopen(endpoint + COUNTS_PATH, timeout=60) as response:
        counts: dict[str, int] = json.loads(response.read())
    return counts


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a running process has used (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def build(inventory: Path, work: Path, target: str, endpoint: str, bucket: str, server: int) -> dict[str, Any]:
    """One CLI build of `inventory`: output and work folder on local disk (target "local") or on S3 (served by
    process `server`, whose CPU time during the build is reported: on a small machine it competes with the
    build's, where a real store's would not), and the bytes written to and read from the store."""
    import boto3

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    if target == "local":
        places = ["--output", str(work / "public"), "--work-dir", str(work / "state")]
    else:
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
        places = ["--output", f"s3://{bucket}/site", "--work-dir", f"s3://{bucket}/work", "--endpoint-url", endpoint]
        _requests(endpoint)  # forget the bucket's creation
    cmd = [
        sys.executable, "-m", "sitemap_ops.cli", "build", "--source", str(inventory),
        "--base-url", "https://www.example.com", *places, "--memory-limit", "2GB", "--quiet",
    ]  # fmt: skip
    server_cpu = _cpu_seconds(server)
    child = peak_rss_of(cmd, work)
    result: dict[str, Any] = {
        "seconds": round(child.seconds, 2),
        "cpu_seconds": round(child.cpu, 2),
        "peak_rss_mb": round(child.peak / 2**20),
    }
    if target == "s3":
        result["server_cpu_seconds"] = round(_cpu_seconds(server) - server_cpu, 2)
        result["requests"] = _requests(endpoint)
        _empty_bucket(endpoint, bucket)
    return result


def _empty_bucket(endpoint: str, bucket: str) -> None:
    """Delete the bucket and its objects, so moto's memory holds one build at a time."""
    import boto3

    s3 = boto3.resource("s3", endpoint_url=endpoint).Bucket(bucket)
    s3.objects.all().delete()
    s3.delete()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000000,10000000", help="realistic input rows, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="builds of each kind, alternating; medians reported")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)  # the server process
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    os.environ.update(CREDENTIALS)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], env=os.environ.copy())
    root = Path(tempfile.mkdtemp(prefix="sitemap-ops-bench-s3-"))
    results: dict[str, Any] = {"cpus": os.cpu_count(), "sizes": {}}
    try:
        wait_for("the S3 server", lambda: _requests(endpoint) is not None, 60)
        for size in (int(s) for s in args.sizes.split(",")):
            inventory = root / f"realistic-{size}.parquet"
            generate_inventory(inventory, size, "realistic")
            runs: dict[str, list[dict[str, Any]]] = {"local": [], "s3": []}
            for attempt in range(args.repeat):
                for target, done in runs.items():
                    bucket = f"bench-{size}-{attempt}"
                    done.append(build(inventory, root / "build", target, endpoint, bucket, server.pid))
                    print(f"  {size:,} rows, {target}, run {attempt + 1}: {json.dumps(done[-1])}", flush=True)
            medians = {
                target: {
                    "seconds": statistics.median(r["seconds"] for r in done),
                    "cpu_seconds": statistics.median(r["cpu_seconds"] for r in done),
                    "peak_rss_mb": max(r["peak_rss_mb"] for r in done),
                }
                for target, done in runs.items()
            }
            medians["s3"]["server_cpu_seconds"] = statistics.median(r["server_cpu_seconds"] for r in runs["s3"])
            medians["s3"]["requests"] = runs["s3"][-1]["requests"]  # the last run's
            medians["s3_over_local"] = {
                "wall": round(medians["s3"]["seconds"] / medians["local"]["seconds"], 2),
                "cpu": round(medians["s3"]["cpu_seconds"] / medians["local"]["cpu_seconds"], 2),
            }
            results["sizes"][size] = medians
            print(f"{size:,} realistic rows (medians of {args.repeat}): {json.dumps(medians)}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
