"""Stage, extensions: images, videos, news and hreflang alternates checked and rendered once per page."""

from __future__ import annotations

import datetime as dt
import re

import duckdb

from sitemap_ops.constants import (
    EXT_HREF_SEP,
    EXT_IMAGE_SEP,
    EXT_LINK_SEP,
    HREFLANG_DEFAULT,
    ISO_639_1,
    ISO_3166_1_ALPHA_2,
    NEWS_LANGUAGE_PATTERN,
    VIDEO_DESCRIPTION_MAX,
    VIDEO_DURATION_MAX,
    VIDEO_MAX_TAGS,
    VIDEO_PLATFORMS,
    VIDEO_RATING_MAX,
    VIDEO_RELATIONSHIPS,
    VIDEO_TITLE_MAX,
    VIDEO_UPLOADER_MAX,
    XML_FORBIDDEN_CHARS,
)
from sitemap_ops.duck import read_sql, set_variables
from sitemap_ops.stage.config import StageSettings
from sitemap_ops.stage.exceptions import StageError
from sitemap_ops.stage.hreflang import issue_counts
from sitemap_ops.stage.result import ExtensionResult
from sitemap_ops.stage.sources import create_url_inventory_view
from sitemap_ops.urls import PLAIN_HOST

# Label propagation needs one step per hop of a cluster's longest path; real hreflang sets are 1-2 hops.
_MAX_LABEL_STEPS = 64


# hreflang codes as the build writes them: en, en-GB, zh-Hant, x-default
HREFLANG_CANONICAL = (
    f"(({'|'.join(ISO_639_1)})(-({'|'.join(ISO_3166_1_ALPHA_2)})|-[A-Z][a-z]{{3}})?|{re.escape(HREFLANG_DEFAULT)})"
)


# A percent-escape normalization keeps: upper-case hex, not of an unreserved character (those are decoded).
_KEPT_ESCAPE = "%([01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF]|[89A-F][0-9A-F])"


def _clean_url(config: StageSettings, hosts: tuple[str, ...], xml_safe: bool = False) -> str:
    """A regex for URLs normalization leaves as they are, on the site's host or one of `hosts`: a path of
    RFC 3986 characters with upper-case escapes of reserved characters and no "." or ".." segment, no query
    or fragment; with `xml_safe`, also without the characters XML escapes (& and ').

    Only plain DNS names (sitemap_ops.urls.PLAIN_HOST) qualify: a listed host with a port, an IP
    address or an IDNA label is left to the checked path, which judges it like any URL. The site's other
    host form is excluded in SQL (so_names_alt_host, sql/stage_macros.sql): the checked path may rewrite it.
    """
    if "*" in hosts:
        names = PLAIN_HOST
    else:
        plain = [h for h in hosts if re.fullmatch(PLAIN_HOST, h) and "xn--" not in h]
        names = "|".join(re.escape(h) for h in (*(site.host for site in config.sites), *plain))
    schemes = "|".join(sorted({re.escape(site.scheme) for site in config.sites}))
    chars = "A-Za-z0-9._~!$()*+,=:@-" if xml_safe else "A-Za-z0-9._~!$&'()*+,=:@-"
    char = f"([{chars}]|{_KEPT_ESCAPE})"
    not_dot = f"([{chars.replace('.', '')}]|{_KEPT_ESCAPE})"
    # a segment that is not "." or "..": empty, or not starting with a dot, or one dot and more, or two and more
    segment = f"({not_dot}{char}*|\\.{not_dot}{char}*|\\.\\.{char}+)?"
    return f"({schemes})://({names})(/{segment})+"


def _regex_char(char: str) -> str:
    """`char` as a regex escape (the separators are control characters)."""
    return f"\\x{ord(char):02x}"


def _joined_pattern(item: str, separator: str) -> str:
    """A regex for items joined by `separator`."""
    return f"{item}({_regex_char(separator)}{item})*"


def extension_variables(config: StageSettings, build_time: dt.datetime) -> dict[str, object]:
    """The values the extension SQL files and sql/stage_macros.sql read with getvariable()."""
    ext = config.extensions
    utc = build_time.astimezone(dt.UTC).replace(tzinfo=None)
    return {
        # the fast path's checks of a whole joined list (sql/stage_macros.sql)
        # URLs XML would escape take the checked path, which escapes them when it joins them
        "ext_clean_images": _joined_pattern(_clean_url(config, ext.image_hosts, xml_safe=True), EXT_IMAGE_SEP),
        "ext_clean_alternates": _joined_pattern(
            HREFLANG_CANONICAL + re.escape(EXT_HREF_SEP) + _clean_url(config, ext.alternate_hosts, xml_safe=True),
            EXT_LINK_SEP,
        ),
        "complete_alternates": ext.complete_alternates,
        # URLs on the site's other host forms, which the checked path rewrites to the site's hosts
        "ext_alt_urls": [f"://{site.alternate_host}/" for site in config.sites]
        if config.normalize.other_host_form == "rewrite"
        else [""],
        # a one-element list with "" when empty: an empty list variable would not be typed VARCHAR[]
        "image_hosts": list(ext.image_hosts) or [""],
        "video_hosts": list(ext.video_hosts) or [""],
        "alternate_hosts": list(ext.alternate_hosts) or [""],
        "xml_forbidden": XML_FORBIDDEN_CHARS,
        "max_images_per_page": ext.max_images_per_page,
        "video_title_max": VIDEO_TITLE_MAX,
        "video_description_max": VIDEO_DESCRIPTION_MAX,
        "video_duration_max": VIDEO_DURATION_MAX,
        "video_rating_max": VIDEO_RATING_MAX,
        "video_uploader_max": VIDEO_UPLOADER_MAX,
        "video_max_tags": VIDEO_MAX_TAGS,
        "video_platforms": list(VIDEO_PLATFORMS),
        "video_relationships": list(VIDEO_RELATIONSHIPS),
        "news_language_pattern": NEWS_LANGUAGE_PATTERN,
        "news_cutoff": utc - dt.timedelta(hours=ext.news_max_age_hours),
        "hreflang_default": HREFLANG_DEFAULT,
        "iso_languages": list(ISO_639_1),
        "iso_regions": list(ISO_3166_1_ALPHA_2),
    }


def _complete_alternates(con: duckdb.DuckDBPyConnection) -> None:
    """Cluster the alternate links; every page of a cluster gets the whole set (ext_alt_completed)."""
    con.execute(read_sql("stage_hreflang_labels"))
    for _ in range(_MAX_LABEL_STEPS):
        (changed,) = con.execute(read_sql("stage_hreflang_step")).fetchall()[0]
        con.execute("DROP TABLE alt_labels")
        con.execute("ALTER TABLE alt_labels_next RENAME TO alt_labels")
        if changed == 0:
            break
    else:
        raise StageError(f"hreflang completion: the alternate clusters did not settle in {_MAX_LABEL_STEPS} steps")
    con.execute(read_sql("stage_hreflang_complete"))


def run_extensions(
    config: StageSettings, con: duckdb.DuckDBPyConnection, build_time: dt.datetime, hreflang_path: str | None
) -> ExtensionResult:
    """Check and render the extensions of the staged pages (the tables page_ext, news_ext, ext_rejects).

    Needs the temp table `normalized` and the extension source views; writes the hreflang report to
    `hreflang_path` (a path DuckDB can write). Without `hreflang_path`, the hreflang checks, which look across
    pages, are left to the keyed pass of a split stage (sitemap_ops.stage.hreflang): the alternates are
    published as found.
    """
    con.execute(read_sql("stage_ext_sets"))
    con.execute(read_sql("stage_ext_collect"))
    # Every distinct extension URL goes through the same normalization as loc, without the site-scope
    # rules (hosts are checked per kind in stage_ext_resolve.sql).
    create_url_inventory_view(con, "ext_url_raw")
    set_variables(con, {"check_scope": False, "keep_raw": True})
    try:
        con.execute(read_sql("stage_ext_url_map"))
    finally:
        set_variables(con, {"check_scope": True, "keep_raw": False})
    con.execute(read_sql("stage_ext_resolve"))

    result = ExtensionResult()
    if hreflang_path is None:
        con.execute("CREATE OR REPLACE TEMP VIEW alt_final AS SELECT * FROM ext_alt_edges")
        return _render(con, result)
    con.execute("CREATE OR REPLACE TEMP VIEW alt_checked_edges AS SELECT * FROM ext_alt_edges")
    con.execute(read_sql("stage_hreflang_edges"))
    con.execute(read_sql("stage_hreflang_check"))
    con.execute("CREATE OR REPLACE TEMP TABLE hreflang_found AS SELECT * FROM hreflang_checked")
    result.hreflang_issues = issue_counts(con, "hreflang_found")
    if config.extensions.complete_alternates:
        _complete_alternates(con)
        # the same checks again, on the completed sets (the view reads the tables made again here)
        con.execute("CREATE OR REPLACE TEMP VIEW alt_checked_edges AS SELECT * FROM ext_alt_completed")
        con.execute(read_sql("stage_hreflang_edges"))
        con.execute(
            "CREATE OR REPLACE TEMP TABLE hreflang_left AS FROM hreflang_checked UNION ALL FROM hreflang_conflicts"
        )
        result.hreflang_issues_left = issue_counts(con, "hreflang_left")
        (added,) = con.execute(read_sql("stage_hreflang_added")).fetchall()[0]
        result.hreflang_links_added = int(added)
        con.execute("CREATE OR REPLACE TEMP VIEW alt_final AS SELECT * FROM ext_alt_completed")
        report = "stage_hreflang_report_completed"
    else:
        con.execute("CREATE OR REPLACE TEMP VIEW alt_final AS SELECT * FROM ext_alt_edges")
        report = "stage_hreflang_report"
    con.sql(read_sql(report)).write_csv(hreflang_path, header=True)
    result.hreflang_path = hreflang_path
    return _render(con, result)


def _render(con: duckdb.DuckDBPyConnection, result: ExtensionResult) -> ExtensionResult:
    """Each page's extension XML (page_ext, news_ext, over the view alt_final) and the video and news counts."""
    con.execute(read_sql("stage_ext_xml"))
    row = con.execute(read_sql("stage_ext_counts")).fetchall()[0]
    result.videos, result.news, result.news_too_old = (int(v) for v in row)
    return result


def count_published(con: duckdb.DuckDBPyConnection, staged_files: list[str], result: ExtensionResult) -> None:
    """Fill in the image and alternate counts from the staged snapshot's files (fast path and checked path
    alike)."""
    set_variables(con, {"staged_files": staged_files})
    row = con.execute(read_sql("stage_ext_published")).fetchall()[0]
    result.pages_with_images, result.images, result.pages_with_alternates, result.alternates = (int(v) for v in row)
