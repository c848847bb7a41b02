"""The news series: articles of the last two days, by an injectable clock."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sitemap_ops.pipeline import run_build
from tests.extensions.rich import SITE, recent, write_rich
from tests.helpers import NOW, site_config


def _article(i: int, published: dt.datetime | None, **fields: object) -> dict:
    return {
        "loc": f"{SITE}/news/{i}",
        "news_publication": "The Example Times",
        "news_language": "en",
        "news_publication_date": published,
        "news_title": f"Story {i}",
        **fields,
    }


def test_articles_older_than_two_days_leave_the_series(tmp_path: Path) -> None:
    rows = [
        _article(1, recent(NOW, 1)),
        _article(2, recent(NOW, 47.9)),
        _article(3, recent(NOW, 48.1)),
        _article(4, recent(NOW, 24 * 30)),
        _article(5, NOW + dt.timedelta(hours=2)),
    ]
    path = write_rich(tmp_path / "inventory.parquet", rows)
    summary = run_build(site_config(tmp_path, path), now=NOW)
    ext = summary.stage.extensions
    assert (ext.news, ext.news_too_old) == (2, 2)
    # a future date is a bad value (dropped and written to the rejects file); old articles are only counted
    assert summary.stage.fields_dropped == {"news_publication_date_future": 1}
    assert summary.plan.sections == {"news-recent": 2, "pages": 5}

    # the same inventory a day later: article 2 has aged out, article 5 is published now
    later = run_build(site_config(tmp_path, path), now=NOW + dt.timedelta(days=1))
    assert (later.stage.extensions.news, later.stage.extensions.news_too_old) == (2, 3)
    assert later.stage.fields_dropped == {}


def test_news_needs_every_field(tmp_path: Path) -> None:
    rows = [
        _article(1, recent(NOW, 1), news_title=None),
        _article(2, recent(NOW, 1), news_language="english"),
        _article(3, recent(NOW, 1), news_publication=""),
        _article(4, None),
        _article(5, recent(NOW, 1), news_language="zh-TW"),
    ]
    path = write_rich(tmp_path / "inventory.parquet", rows)
    summary = run_build(site_config(tmp_path, path), now=NOW)
    assert summary.stage.fields_dropped == {
        "news_language_invalid": 1,
        "news_publication_date_missing": 1,
        "news_publication_missing": 1,
        "news_title_missing": 1,
    }
    assert summary.stage.extensions.news == 1


def test_max_age_is_configurable(tmp_path: Path) -> None:
    path = write_rich(tmp_path / "inventory.parquet", [_article(1, recent(NOW, 30))])
    summary = run_build(site_config(tmp_path, path, extensions={"news_max_age_hours": 24}), now=NOW)
    assert summary.stage.extensions.news_too_old == 1
