"""The code lists in constants.py match the ISO tables (pycountry carries them)."""

from __future__ import annotations

import pycountry

from sitemap_ops.constants import ISO_639_1, ISO_3166_1_ALPHA_2


def test_iso_639_1_languages() -> None:
    assert set(ISO_639_1) == {lang.alpha_2 for lang in pycountry.languages if hasattr(lang, "alpha_2")}


def test_iso_3166_1_alpha_2_regions() -> None:
    assert set(ISO_3166_1_ALPHA_2) == {country.alpha_2 for country in pycountry.countries}
