"""Security: XML entities and DTDs, decompression bombs, huge input, and markup injection through URLs."""

from __future__ import annotations

import gzip
from pathlib import Path

from lxml import etree

from sitemap_ops.constants import SITEMAP_NS
from sitemap_ops.validate import validate
from tests.helpers import NOW, build, read_file

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_external_entities_are_never_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    path = tmp_path / "xxe.xml"
    path.write_text(
        f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file://{secret}">]>'
        f'<urlset xmlns="{NS}"><url><loc>https://www.example.com/&x;</loc></url></urlset>'
    )
    report = validate(str(path), now=NOW)
    assert any("DOCTYPE" in p.message for p in report.problems)
    assert not any("TOP-SECRET" in str(p) for p in report.problems)


def test_billion_laughs_is_refused_quickly(tmp_path: Path) -> None:
    entities = '<!ENTITY a0 "lol">' + "".join(
        f'<!ENTITY a{i} "{"&a" + str(i - 1) + ";" * 1}' * 1 + f'{("&a" + str(i - 1) + ";") * 9}">' for i in range(1, 12)
    )
    path = tmp_path / "laughs.xml"
    path.write_text(
        f'<?xml version="1.0"?><!DOCTYPE urlset [{entities}]><urlset xmlns="{NS}"><url><loc>&a11;</loc></url></urlset>'
    )
    report = validate(str(path), now=NOW)
    # refused before any expansion took memory: by libxml2's amplification limit or for the DTD itself
    [problem] = report.problems
    assert "amplification" in problem.message or "DOCTYPE" in problem.message


def test_gzip_bomb_stops_at_the_byte_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.xml.gz"
    # 200 MB of zeros compresses to ~200 KB; validate must stop inflating just past 50 MB.
    compressor = gzip.compress(b"\0" * (200 * 1024 * 1024), compresslevel=9)
    path.write_bytes(compressor)
    report = validate(str(path), now=NOW)
    assert [p.message for p in report.problems] == ["over 52,428,800 bytes uncompressed (the protocol's limit)"]


def test_broken_gzip_and_garbage(tmp_path: Path) -> None:
    (tmp_path / "broken.xml.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    assert any("broken gzip" in p.message for p in validate(str(tmp_path / "broken.xml.gz"), now=NOW).problems)
    (tmp_path / "bad.xml").write_bytes(b"<urlset><url><loc>unclosed")
    assert any("not well-formed" in p.message for p in validate(str(tmp_path / "bad.xml"), now=NOW).problems)


def test_markup_in_urls_cannot_inject_elements(tmp_path: Path) -> None:
    evil = "https://www.example.com/x</loc></url><url><loc>https://evil.example/<!--"
    cdata = "https://www.example.com/y?a=]]>&b=<![CDATA[z"
    amp = "https://www.example.com/z?a=1&b='2'&c=&amp;"
    for encode_iri in (True, False):
        out_dir = tmp_path / f"iri-{encode_iri}"
        out_dir.mkdir()
        summary, out = build(
            out_dir, [{"loc": evil}, {"loc": cdata}, {"loc": amp}], normalize={"encode_iri": encode_iri}
        )
        root = etree.fromstring(read_file(out / summary.plan.shards[0].name))
        locs = [u.findtext(f"{{{SITEMAP_NS}}}loc") for u in root.iter(f"{{{SITEMAP_NS}}}url")]
        assert not any(loc.startswith("https://evil.example") for loc in locs)
        assert amp in locs, "& and ' are XML-escaped in the file and read back unchanged"
        if encode_iri:
            assert len(locs) == 3, "each URL stays one <url> element, its markup percent-encoded"
        else:
            # not valid URIs without encoding: rejected, never written raw
            assert locs == [amp]
            assert summary.stage.rejected == {"invalid_characters": 2}


def test_huge_single_url_line_is_handled(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("https://www.example.com/" + "a" * 5_000_000 + "\n")
    report = validate(str(path), now=NOW)
    assert any("the limit is 2,048" in p.message for p in report.problems)
