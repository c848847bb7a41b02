"""IndexNow submission against a local server (tests/changes/indexnow_server.py) that checks every request
as the protocol says and answers with each code the protocol documents (and a dropped connection)."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitemap_ops.cli import main
from sitemap_ops.errors import ConfigError, SitemapOpsError
from sitemap_ops.pipeline import run_build
from tests.changes.indexnow_server import IndexNowServer, local_key_file, running
from tests.helpers import NOW, site_config, write_inventory

BASE = "https://www.example.com"
KEY = "a1b2c3d4e5f6a7b8c9d0-key"


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[IndexNowServer]:
    with running(IndexNowServer(local_key_file(tmp_path / "public"))) as server:
        yield server


def urls(n: int, prefix: str = "p") -> list[dict]:
    return [{"loc": f"{BASE}/{prefix}{i}", "lastmod": dt.datetime(2026, 1, 1)} for i in range(n)]


def run(tmp_path: Path, server: IndexNowServer, rows: list[dict], hours: int, **indexnow):
    write_inventory(tmp_path / "inventory.parquet", rows)
    settings = {"endpoint": server.url, "key": KEY, "time_budget_seconds": 20.0, **indexnow}
    config = site_config(tmp_path, str(tmp_path / "inventory.parquet"), indexnow=settings)
    return run_build(config, now=NOW + dt.timedelta(hours=hours))


def test_first_build_is_not_submitted_then_changes_are_each_sent_once(tmp_path, endpoint) -> None:
    rows = urls(30)
    summary = run(tmp_path, endpoint, rows, 0)
    assert endpoint.requests == 0 and summary.notified is not None
    assert "first" in " ".join(summary.notified.notes)
    rows2 = rows[1:] + urls(3, "new")
    rows2[0]["lastmod"] = dt.datetime(2026, 5, 1)
    summary = run(tmp_path, endpoint, rows2, 1)
    assert sorted(endpoint.sent()) == sorted([f"{BASE}/p0", f"{BASE}/p1", *(f"{BASE}/new{i}" for i in range(3))])
    assert summary.notified.submitted == 5 and summary.notified.deferred == 0
    assert (tmp_path / "public" / f"{KEY}.txt").read_text() == KEY  # the key file is published with the sitemaps
    run(tmp_path, endpoint, rows2, 2)  # nothing changed: nothing sent
    assert endpoint.requests == 1 and not endpoint.problems


def test_batches_hold_at_most_10000_urls(tmp_path, endpoint) -> None:
    summary = run(tmp_path, endpoint, urls(25_000), 0, submit_first_build=True)
    assert [len(b) for b in endpoint.accepted] == [10_000, 10_000, 5_000]
    assert len(set(endpoint.sent())) == 25_000 and summary.notified.batches == 3


def test_429_with_retry_after_and_a_dropped_connection_are_retried(tmp_path, endpoint) -> None:
    endpoint.script = ["429:1", "drop", "503", "202"]
    summary = run(tmp_path, endpoint, urls(5), 0, submit_first_build=True)
    assert endpoint.requests == 4
    assert sorted(endpoint.sent()) == sorted(r["loc"] for r in urls(5))
    assert summary.notified.deferred == 0


def test_what_the_time_budget_left_is_sent_by_the_next_build_exactly_once(tmp_path, endpoint) -> None:
    endpoint.script = ["200"] + ["500"] * 50
    summary = run(tmp_path, endpoint, urls(25), 0, submit_first_build=True, batch_size=10, time_budget_seconds=1.5)
    assert summary.notified.submitted == 10 and summary.notified.deferred == 15
    assert "15 URL(s) stay queued for the next build" in summary.notified.warning
    endpoint.script = []
    summary = run(tmp_path, endpoint, [*urls(25), *urls(2, "x")], 1, batch_size=10)
    assert summary.notified.submitted == 17
    sent = endpoint.sent()
    assert len(sent) == len(set(sent)) == 27


@pytest.mark.parametrize(("code", "words"), [("403", "key is not valid")])
def test_a_refusal_of_the_key_stops_with_one_line_and_keeps_the_urls(tmp_path, endpoint, capsys, code, words) -> None:
    write_inventory(tmp_path / "inventory.parquet", urls(3))
    config = tmp_path / "site.toml"
    config.write_text(
        f'base_url = "{BASE}"\noutput = "public"\nwork_dir = "work"\n[[sources]]\npath = "inventory.parquet"\n'
        f'[indexnow]\nendpoint = "{endpoint.url}"\nkey_env = "TEST_INDEXNOW_KEY"\nsubmit_first_build = true\n'
    )
    endpoint.script = [code]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TEST_INDEXNOW_KEY", KEY)
        assert main(["build", "--config", str(config)]) == 1
        out, err = capsys.readouterr()
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1 and f"HTTP {code}" in errors[0] and words in errors[0]
        assert errors[0].startswith("sitemap-ops build: error: the sitemaps were published; IndexNow")
        assert KEY not in out + err
        assert "3 deferred" in out
        # the next build (the endpoint answers again) sends the kept URLs, once
        assert main(["build", "--config", str(config), "--quiet"]) == 0
    assert sorted(endpoint.sent()) == sorted(r["loc"] for r in urls(3))


def _site_file(tmp_path: Path, endpoint: IndexNowServer, extra: str = "") -> str:
    config = tmp_path / "site.toml"
    config.write_text(
        f'base_url = "{BASE}"\noutput = "public"\nwork_dir = "work"\n[[sources]]\npath = "inventory.parquet"\n'
        f'[indexnow]\nendpoint = "{endpoint.url}"\nkey_env = "TEST_INDEXNOW_KEY"\nsubmit_first_build = true\n{extra}'
    )
    return str(config)


@pytest.mark.parametrize(("code", "words"), [("422", "not on the host"), ("400", "bad request")])
def test_urls_the_endpoint_refuses_are_set_aside_and_the_queue_goes_on(
    tmp_path, endpoint, capsys, monkeypatch, code, words
) -> None:
    # (a 400 or 422 blocked the queue for good: every later build resent the refused batch first and exited 1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TEST_INDEXNOW_KEY", KEY)
    config = _site_file(tmp_path, endpoint, "batch_size = 3\n")
    write_inventory(tmp_path / "inventory.parquet", urls(5))
    endpoint.script = [code, "200"]  # the first batch (p0, p1, p2) refused, the second accepted
    assert main(["build", "--config", config, "--quiet"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sitemap-ops build: warning: the sitemaps were published; "), err
    assert f"HTTP {code}" in err[0] and words in err[0] and "3 URL(s) set aside" in err[0] and KEY not in err[0]
    assert sorted(endpoint.sent()) == [f"{BASE}/p3", f"{BASE}/p4"]
    # what waits and what is set aside, with why: status, inspect, the report
    assert main(["indexnow", "status", "--config", config, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["waiting"] == 0 and status["set_aside"] == 3
    assert [u["loc"] for u in status["set_aside_sample"]] == [f"{BASE}/p{i}" for i in range(3)]
    assert all(f"HTTP {code}" in u["reason"] for u in status["set_aside_sample"])
    assert main(["inspect", "public"]) == 0
    assert "indexnow: 0 URL(s) waiting, 3 set aside" in capsys.readouterr().out
    report = json.loads(next((tmp_path / "work").glob("*/report.json")).read_text())
    assert report["indexnow"]["set_aside"] == 3
    # the next build sends its own changes: the refused batch no longer stands in front of them
    write_inventory(tmp_path / "inventory.parquet", [*urls(5), *urls(2, "new")])
    assert main(["build", "--config", config, "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert sorted(endpoint.sent()) == [f"{BASE}/new0", f"{BASE}/new1", f"{BASE}/p3", f"{BASE}/p4"]
    # queued again on request, the next build sends them, once
    assert main(["indexnow", "retry", "--config", config]) == 0
    assert "3 URL(s) queued again" in capsys.readouterr().out
    assert main(["build", "--config", config, "--quiet"]) == 0
    assert sorted(endpoint.sent()) == sorted([*(r["loc"] for r in urls(5)), f"{BASE}/new0", f"{BASE}/new1"])
    assert json.loads(_status(config, capsys))["set_aside"] == 0
    # or dropped: never sent
    endpoint.script = [code]
    write_inventory(tmp_path / "inventory.parquet", [*urls(5), *urls(3, "more")])
    assert main(["build", "--config", config, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["indexnow", "drop", "--config", config]) == 0
    assert "3 URL(s) set aside dropped" in capsys.readouterr().out
    assert main(["build", "--config", config, "--quiet"]) == 0
    assert not any("/more" in url for url in endpoint.sent())
    assert json.loads(_status(config, capsys))["set_aside"] == 0


def _status(config: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["indexnow", "status", "--config", config, "--json"]) == 0
    return capsys.readouterr().out


def test_an_outage_for_the_whole_time_budget_is_a_warning_a_cron_user_sees(tmp_path, endpoint, capsys, monkeypatch):
    # (it exited 0 with a note in the summary only, which --quiet does not print)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TEST_INDEXNOW_KEY", KEY)
    config = _site_file(tmp_path, endpoint, "time_budget_seconds = 1.5\n")
    write_inventory(tmp_path / "inventory.parquet", urls(4))
    endpoint.script = ["503"] * 50
    assert main(["build", "--config", config, "--quiet", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("sitemap-ops build: warning: the sitemaps were published; IndexNow kept answering 429 or 5xx")
    assert "4 URL(s) stay queued for the next build" in err and len(err.strip().splitlines()) == 1
    notified = json.loads(out)["indexnow"]
    assert notified["queue"] == {"waiting": 4, "set_aside": 0} and notified["warning"]
    assert main(["indexnow", "status", "--config", config]) == 0
    assert "waiting:              4" in capsys.readouterr().out


def test_an_endpoint_that_answers_one_byte_a_second_is_left_at_the_time_budget(tmp_path, endpoint) -> None:
    # (the socket timeout bounds each read, so a trickling answer held the build, and its lease, past the budget)
    run(tmp_path, endpoint, urls(5), 0)
    endpoint.script = ["trickle:15"]
    started = time.monotonic()
    result = run(tmp_path, endpoint, urls(6), 1, time_budget_seconds=2.0).notified
    assert time.monotonic() - started < 10
    assert result is not None and result.submitted == 0 and result.deferred == 1
    assert run(tmp_path, endpoint, urls(6), 2).notified.submitted == 1  # sent by the next build, once


def test_a_redirect_is_a_refusal_not_an_acceptance(tmp_path, endpoint) -> None:
    run(tmp_path, endpoint, urls(5), 0)
    endpoint.script = ["redirect"]
    result = run(tmp_path, endpoint, urls(6), 1).notified
    assert result is not None and result.submitted == 0 and "redirect" in result.error and result.deferred == 1


def test_the_daily_cap_defers_the_rest_to_the_next_day(tmp_path, endpoint) -> None:
    summary = run(tmp_path, endpoint, urls(12), 0, submit_first_build=True, max_urls_per_day=5)
    assert summary.notified.submitted == 5 and summary.notified.deferred == 7
    summary = run(tmp_path, endpoint, urls(12), 1, max_urls_per_day=5)  # the same day
    assert summary.notified.submitted == 0
    summary = run(tmp_path, endpoint, urls(12), 30, max_urls_per_day=5)  # the next day
    assert summary.notified.submitted == 5
    summary = run(tmp_path, endpoint, urls(12), 60, max_urls_per_day=5)
    assert summary.notified.submitted == 2
    assert sorted(endpoint.sent()) == sorted(r["loc"] for r in urls(12))


def test_changes_of_a_build_that_did_not_submit_are_sent_by_the_next(tmp_path, endpoint) -> None:
    run(tmp_path, endpoint, urls(5), 0)
    run(tmp_path, endpoint, [*urls(5), *urls(1, "b")], 1, enabled=False)  # its notify step never ran
    run(tmp_path, endpoint, [*urls(5), *urls(1, "b"), *urls(1, "c")], 2)
    assert sorted(endpoint.sent()) == [f"{BASE}/b0", f"{BASE}/c0"]


def test_a_failed_build_submits_nothing(tmp_path, endpoint) -> None:
    run(tmp_path, endpoint, urls(20), 0)
    with pytest.raises(Exception, match=r"circuit breaker|would publish"):
        run(tmp_path, endpoint, urls(2), 1)
    assert endpoint.requests == 0


def test_key_rules(tmp_path) -> None:
    source = str(write_inventory(tmp_path / "inventory.parquet", urls(1)))
    with pytest.raises(ConfigError, match="8 to 128") as info:
        site_config(tmp_path, source, indexnow={"key": "short!"})
    assert "short!" not in str(info.value)
    with pytest.raises(ConfigError, match="exactly one"):
        site_config(tmp_path, source, indexnow={"key": KEY, "key_env": "X"})
    with pytest.raises(ConfigError, match="key_location"):
        site_config(tmp_path, source, public_url=f"{BASE}/sitemaps/", indexnow={"key": KEY})
    config = site_config(tmp_path, source, indexnow={"key": KEY})
    assert KEY not in repr(config)


@pytest.mark.parametrize("key", [{"key_env": "SITEMAP_OPS_TEST_UNSET_KEY"}, {"key_file": "missing.txt"}])
def test_a_key_the_environment_lacks_stops_the_build_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, key: dict
) -> None:
    # (found only after publishing, it gave exit 2 with no summary and no report)
    monkeypatch.delenv("SITEMAP_OPS_TEST_UNSET_KEY", raising=False)
    write_inventory(tmp_path / "inventory.parquet", urls(3))
    table = "\n".join(f'{k} = "{v}"' for k, v in key.items())
    (tmp_path / "site.toml").write_text(
        f'base_url = "{BASE}"\noutput = "public"\nwork_dir = "work"\n[[sources]]\npath = "inventory.parquet"\n'
        f"[indexnow]\n{table}\n"
    )
    assert main(["build", "--config", str(tmp_path / "site.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ("SITEMAP_OPS_TEST_UNSET_KEY" in err[0] or "missing.txt" in err[0])
    assert not (tmp_path / "public").exists() and not (tmp_path / "work").exists()
    # a dry run publishes nothing, so it needs no key
    assert main(["plan", "--config", str(tmp_path / "site.toml"), "--quiet"]) == 0


def test_retry_after_in_seconds_a_date_or_neither() -> None:
    from sitemap_ops.notify.indexnow import _retry_after

    assert _retry_after("5") == 5.0
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
    assert _retry_after("soon") is None and _retry_after(None) is None  # not a traceback: the backoff decides


def test_a_foreign_file_at_the_key_files_name_stops_the_build_before_the_switch(tmp_path, endpoint) -> None:
    out = tmp_path / "public"
    out.mkdir(exist_ok=True)
    (out / f"{KEY}.txt").write_text("someone else's file")
    with pytest.raises(SitemapOpsError, match=r"key file for another key.*nothing live was changed") as caught:
        run(tmp_path, endpoint, urls(5), 0)
    assert KEY not in str(caught.value)
    assert (out / f"{KEY}.txt").read_text() == "someone else's file"
    # refused before the index switch: no index, no manifest, no robots.txt went live
    assert not {"sitemap.xml", "manifest.json", "robots.txt"} & {p.name for p in out.iterdir()}
    (out / f"{KEY}.txt").unlink()
    run(tmp_path, endpoint, urls(5), 1, submit_first_build=True)
    assert {"sitemap.xml", "manifest.json", f"{KEY}.txt"} <= {p.name for p in out.iterdir()}
