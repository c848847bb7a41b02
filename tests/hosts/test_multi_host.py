"""Multi-host inventories ([[hosts]]): one build reads the inventory once and publishes one independent
sitemap set per host, each valid, each read back by an independent parser (usp, over HTTP through a proxy
that routes each host name to its output) with exactly its host's URLs; one host's failure leaves the others
intact."""

from __future__ import annotations

import csv
import datetime as dt
import http.server
import json
import re
import threading
from collections.abc import Iterator
from html import escape as html_escape
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from usp.tree import sitemap_tree_for_homepage

from sitemap_ops.cli import main
from sitemap_ops.config import SiteConfig, load_config
from sitemap_ops.errors import ConfigError
from sitemap_ops.pipeline import run_build
from sitemap_ops.storage import Storage, StorageConfig
from tests.helpers import NOW, published, read_file, write_inventory
from tests.publish.faults import read_live
from tests.servers import S3Server

HOSTS = ("www.example.com", "www.example.de", "acme.shop.example.net")


def _locs(host: str, n: int, tag: str = "") -> list[str]:
    return [f"http://{host}/p/{tag}{i}" for i in range(n)]


def _inventory(tmp_path: Path, tag: str = "") -> tuple[str, dict[str, set[str]]]:
    """Pages on the three hosts (some in another spelling), plus an unlisted host's; the expected sets."""
    expected = {"www.example.com": set(_locs(HOSTS[0], 120, tag)), "www.example.de": set(_locs(HOSTS[1], 80, tag)),
                "acme.shop.example.net": set(_locs(HOSTS[2], 30, tag))}  # fmt: skip
    rows = [loc for locs in expected.values() for loc in sorted(locs)]
    rows += [f"HTTP://WWW.EXAMPLE.DE:80/p/{tag}{i}?utm_source=mail" for i in range(10)]  # duplicates of .de pages
    rows += ["http://example.com/p/extra"]  # the other host form of www.example.com
    expected["www.example.com"].add("http://www.example.com/p/extra")
    rows += ["http://unlisted.example.org/p/1", "http://shop.example.net/p/1"]
    path = write_inventory(tmp_path / f"pages{tag}.parquet", [{"loc": loc} for loc in rows])
    return path, expected


def _site(tmp_path: Path, source: str, outputs: dict[str, str], **extra: object):
    first, *others = HOSTS
    return load_config(
        None,
        {
            "base_url": f"http://{first}",
            "output": outputs[first],
            "work_dir": str(tmp_path / "work"),
            "sources": [{"path": source}],
            "shards": {"max_urls": 50},
            "hosts": [{"base_url": f"http://{host}", "output": outputs[host]} for host in others],
            **extra,
        },
    )


class _HostRouter(http.server.BaseHTTPRequestHandler):
    """A forward proxy for http:// URLs that serves each host's files from its output folder."""

    roots: ClassVar[dict[str, Path]] = {}

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        root = self.roots.get(url.hostname or "")
        file = root / url.path.lstrip("/") if root else None
        if file is None or not file.is_file():
            self.send_error(404)
            return
        data = file.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Type", "text/plain" if file.suffix == ".txt" else "application/xml")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    roots: dict[str, Path] = {}
    handler = type("Router", (_HostRouter,), {"roots": roots})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{httpd.server_address[1]}")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield roots
    httpd.shutdown()
    httpd.server_close()


def test_three_hosts_get_three_independent_valid_sitemap_sets(
    tmp_path: Path, proxy: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    source, expected = _inventory(tmp_path)
    outputs = {host: str(tmp_path / "public" / host) for host in HOSTS}
    summary = run_build(_site(tmp_path, source, outputs), now=NOW)
    assert not summary.failed_hosts
    assert [h.host for h in summary.hosts] == list(HOSTS)
    for host in HOSTS:
        proxy[host] = Path(outputs[host])
        out = Path(outputs[host])
        assert main(["validate", str(out / "robots.txt"), "--base-url", f"http://{host}"]) == 0
        robots = (out / "robots.txt").read_text()
        assert robots.count("Sitemap: ") == 1 and f"Sitemap: http://{host}/sitemap.xml" in robots
        tree = sitemap_tree_for_homepage(f"http://{host}/")
        assert {page.url for page in tree.all_pages()} == expected[host], host
        manifest = (out / "manifest.json").read_text()
        assert f'"base_url": "http://{host}' in manifest
    # counts: each host its own; the unlisted hosts' URLs are rejected once, on the first host
    by_host = {h.host: h for h in summary.hosts}
    assert {host: h.plan.total_urls for host, h in by_host.items()} == {h: len(expected[h]) for h in HOSTS}
    assert by_host["www.example.de"].stage.duplicates == 10
    assert by_host["www.example.com"].stage.rejected == {"out_of_scope": 2}
    assert by_host["www.example.de"].stage.rejected == {} and by_host["acme.shop.example.net"].stage.rejected == {}
    assert sum(h.stage.rows_in for h in summary.hosts) == summary.stage.rows_in == 243
    with open(summary.stage.rejects_path, newline="") as f:
        rejects = {row["loc"]: row["reason"] for row in csv.DictReader(f)}
    assert rejects == {"http://unlisted.example.org/p/1": "out_of_scope", "http://shop.example.net/p/1": "out_of_scope"}
    # each host's change set, work folder and report are its own
    assert {h.host: h.plan.changes["added"] for h in summary.hosts} == {h: len(expected[h]) for h in HOSTS}
    # --json: one shape, the shared stage at the top and each host's build under hosts (no top-level urls: 0)
    as_json = json.loads(json.dumps(summary.to_dict()))
    assert "urls" not in as_json and as_json["stage"]["rows_in"] == 243 and not as_json["failed_hosts"]
    assert {host: h["urls"] for host, h in as_json["hosts"].items()} == {h: len(expected[h]) for h in HOSTS}
    assert sorted(p.name for p in (tmp_path / "work").iterdir() if p.name in HOSTS) == sorted(HOSTS)
    capsys.readouterr()
    assert main(["report", outputs["www.example.de"]]) == 0
    assert "/work/www.example.de/" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "work")]) == 2  # the site's root holds the shared stage only
    assert f"in each host's folder: {', '.join(sorted(HOSTS))}" in capsys.readouterr().err


def test_the_shared_stages_old_work_folders_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sitemap_ops import workspace

    monkeypatch.setattr(workspace, "KEEP_WORK_DIRS", 2)
    source, _ = _inventory(tmp_path)
    outputs = {host: str(tmp_path / "public" / host) for host in HOSTS}
    for hour in range(4):
        run_build(_site(tmp_path, source, outputs), now=NOW + dt.timedelta(hours=hour))
    stages = sorted(p.name for p in (tmp_path / "work").iterdir() if p.name not in HOSTS)
    assert len(stages) == 2 and stages[-1].startswith("20261121T15")  # the newest two builds' folders
    for host in HOSTS:
        assert len([p for p in (tmp_path / "work" / host).iterdir() if p.is_dir() and p.name[0] == "2"]) == 2
    assert not list((tmp_path / "work").glob(f"{stages[-1]}/staged*"))  # the snapshot goes at once


def test_one_hosts_failure_leaves_the_other_hosts_live_sets_intact(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    buckets = {host: f"{s3.bucket}-{i}" for i, host in enumerate(HOSTS)}
    for bucket in buckets.values():
        s3.client.create_bucket(Bucket=bucket)
    outputs = {host: f"s3://{bucket}/sitemaps" for host, bucket in buckets.items()}
    storage = {"endpoint_url": s3.endpoint}
    source, first = _inventory(tmp_path)
    assert run_build(_site(tmp_path, source, outputs, storage=storage), now=NOW).failed_hosts == {}

    # the next build changes every host's URLs; the .de bucket refuses every write
    source, second = _inventory(tmp_path, tag="v2-")
    s3.app.fail("PUT", f"{buckets['www.example.de']}/*", status=403)
    config = _site(tmp_path, source, outputs, storage=storage)
    summary = run_build(config, now=NOW + dt.timedelta(hours=1))
    assert list(summary.failed_hosts) == ["www.example.de"]
    assert [h.host for h in summary.hosts] == ["www.example.com", "acme.shop.example.net"]

    def live(host: str) -> set[str]:
        locs = read_live(Storage.open(outputs[host], StorageConfig(endpoint_url=s3.endpoint)), f"http://{host}/")
        assert len(locs) == len(set(locs))
        return set(locs)

    assert live("www.example.com") == second["www.example.com"]
    assert live("acme.shop.example.net") == second["acme.shop.example.net"]
    assert live("www.example.de") == first["www.example.de"]  # the last successful build's, exactly

    # one page for the site: each host's outcome, linked to its own report (the failed host's says why)
    page = Path(summary.report)
    html = page.read_text()
    assert page.name == "report.html" and page.parent.name == summary.build_id and "of 3 hosts" in html
    links = dict(re.findall(r'<a href="([^"]+)">([^<]+)</a>', html))
    assert sorted(links.values()) == sorted(HOSTS)
    for href, host in links.items():
        report = json.loads((page.parent / href).with_name("report.json").read_text())
        assert report["base_url"] == f"http://{host}" and report["published"] == (host != "www.example.de")
    failed_row = html.split('">www.example.de</a>')[1].split("</tr>")[0]
    assert "failed: nothing it planned went live" in failed_row
    assert html_escape(summary.failed_hosts["www.example.de"]) in failed_row

    # the CLI says which host failed, in one line, and exits 1
    s3.app.fail("PUT", f"{buckets['www.example.de']}/*", status=403)
    toml = tmp_path / "multi.toml"
    toml.write_text(
        f'base_url = "http://{HOSTS[0]}"\noutput = "{outputs[HOSTS[0]]}"\nwork_dir = "{tmp_path / "work"}"\n'
        f'[[sources]]\npath = "{source}"\n[storage]\nendpoint_url = "{s3.endpoint}"\n'
        + "".join(f'[[hosts]]\nbase_url = "http://{h}"\noutput = "{outputs[h]}"\n' for h in HOSTS[1:])
    )
    assert main(["build", "--config", str(toml), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sitemap-ops build: error: host www.example.de: ")
    assert "Traceback" not in err[0]


def test_host_lists_are_checked(tmp_path: Path) -> None:
    source = str(tmp_path / "x.parquet")

    def config(hosts: list[dict]) -> SiteConfig:
        data = {"base_url": "https://www.example.com", "output": str(tmp_path / "a"), "hosts": hosts,
                "work_dir": str(tmp_path / "work"), "sources": [{"path": source}]}  # fmt: skip
        return load_config(None, data)

    with pytest.raises(ConfigError, match=r"www\.example\.com is listed twice"):
        config([{"base_url": "https://www.example.com/de/", "output": str(tmp_path / "b")}])
    with pytest.raises(ConfigError, match=r"example\.com and www\.example\.com are one host's two forms"):
        config([{"base_url": "https://example.com", "output": str(tmp_path / "b")}])
    with pytest.raises(ConfigError, match="must be separate folders"):
        config([{"base_url": "https://www.example.de", "output": str(tmp_path / "a" / "de")}])
    with pytest.raises(ConfigError, match=r"work_dir .* must be a folder of its own"):
        config([{"base_url": "https://www.example.de", "output": str(tmp_path / "work" / "de")}])
    with pytest.raises(ConfigError, match=r"hosts\.base_url must be an absolute http"):
        config([{"base_url": "www.example.de", "output": str(tmp_path / "b")}])
    # the same folder by another name: a link to it, a file:// URL, s3a:// for s3:// (where build files such as
    # rejects.csv would become public, or a second host would publish over the first)
    (tmp_path / "a").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "a")
    for alias in (str(tmp_path / "alias"), f"file://{tmp_path / 'a'}"):
        with pytest.raises(ConfigError, match="must be separate folders"):
            config([{"base_url": "https://www.example.de", "output": alias}])
    (tmp_path / "work-alias").symlink_to(tmp_path / "a", target_is_directory=True)
    with pytest.raises(ConfigError, match=r"work_dir .* must be a folder of its own"):
        load_config(None, {"base_url": "https://www.example.com", "output": str(tmp_path / "a"),
                           "work_dir": str(tmp_path / "work-alias"), "sources": [{"path": source}]})  # fmt: skip
    on_s3 = {"base_url": "https://www.example.com", "output": "s3://bucket/site", "work_dir": "s3://bucket/work"}
    with pytest.raises(ConfigError, match="must be separate folders"):
        hosts = [{"base_url": "https://www.example.de", "output": "s3a://bucket/site/"}]
        load_config(None, {**on_s3, "sources": [{"path": source}], "hosts": hosts})
    sites = config([{"base_url": "https://www.example.de", "output": str(tmp_path / "b")}]).host_configs()
    assert [s.base_url for s in sites] == ["https://www.example.com", "https://www.example.de"]
    assert [Path(s.work_dir).name for s in sites] == ["www.example.com", "www.example.de"]
    assert [s.robots for s in sites] == [str(tmp_path / "a" / "robots.txt"), str(tmp_path / "b" / "robots.txt")]


def test_a_multi_host_site_staged_in_url_ranges_or_input_splits_publishes_what_one_query_does(
    tmp_path: Path,
) -> None:
    source, expected = _inventory(tmp_path)
    pq.write_table(pq.read_table(source), source, row_group_size=50)  # row groups to split by
    files, counts = {}, {}
    for name, duckdb in {"one": {}, "ranges": {"stage_partitions": 4}, "splits": {"stage_splits": 3}}.items():
        root = tmp_path / name
        outputs = {host: str(root / "public" / host) for host in HOSTS}
        summary = run_build(_site(root, source, outputs, duckdb=duckdb), now=NOW)
        assert not summary.failed_hosts
        files[name] = {
            host: {p.name: read_file(p) for p in sorted(Path(outputs[host]).iterdir()) if p.name != "manifest.json"}
            for host in HOSTS
        }
        counts[name] = [(h.stage.rows_in, h.stage.staged, h.stage.duplicates, h.stage.rejected) for h in summary.hosts]
        for host in HOSTS:
            assert set(published(Path(outputs[host]))) == expected[host], host
    assert files["one"] == files["ranges"] == files["splits"]
    assert counts["one"] == counts["ranges"] == counts["splits"]


def test_a_multi_host_site_applies_its_exclusion_sources_in_input_splits_as_one_query_does(tmp_path: Path) -> None:
    """Each host's excluded URLs and canonicals (one on another host) counted by the URL ranges that apply them."""
    source, expected = _inventory(tmp_path)
    pq.write_table(pq.read_table(source), source, row_group_size=50)
    com, de = sorted(expected[HOSTS[0]]), sorted(expected[HOSTS[1]])
    crawl = {
        "loc": com[:10] + de[:15],
        "status": [301] * 10 + [200] * 15,
        "canonical": [None] * 10 + de[20:30] + com[30:35],
    }
    pq.write_table(pa.table(crawl), tmp_path / "crawl.parquet", row_group_size=10)
    sources = [{"path": source}, {"path": str(tmp_path / "crawl.parquet"), "kind": "exclude"}]
    files, counts = {}, {}
    for name, duckdb in {"one": {}, "splits": {"stage_splits": 5, "stage_partitions": 3}}.items():
        root = tmp_path / name
        outputs = {host: str(root / "public" / host) for host in HOSTS}
        summary = run_build(_site(root, source, outputs, duckdb=duckdb, sources=sources), now=NOW)
        assert not summary.failed_hosts
        files[name] = {
            host: {p.name: read_file(p) for p in sorted(Path(outputs[host]).iterdir()) if p.name != "manifest.json"}
            for host in HOSTS
        }
        counts[name] = [
            (h.stage.rows_in, h.stage.staged, h.stage.duplicates, h.stage.rejected, h.stage.canonicals)
            for h in summary.hosts
        ]
    assert files["one"] == files["splits"]
    assert counts["one"] == counts["splits"]
    (*_, com_rejected, com_canonicals), (*_, de_rejected, de_canonicals) = counts["one"][:2]
    # (3 of the 15 .de pages are in the inventory twice, in another spelling: each row is kept out, and each
    # gives its canonical a row)
    assert com_rejected["excluded_status"] == 10 and de_rejected["excluded_canonical"] == 18
    assert (com_canonicals, de_canonicals) == (6, 12)
