"""Failures of the notify step (IndexNow submission); the sitemaps were published before it ran."""

from __future__ import annotations

from sitemap_ops.errors import SitemapOpsError


class NotifyError(SitemapOpsError):
    """Submitting a published build's changes failed; what was not sent stays queued for the next build."""

    retryable = True


class IndexNowKeyError(NotifyError):
    """The IndexNow key is missing or malformed, or its key file cannot be published (never shows the key)."""

    retryable = False


class IndexNowRejectedError(NotifyError):
    """The IndexNow endpoint refused the submission (400, 403, 422 or another 4xx): retrying cannot fix it."""

    retryable = False
    status: int = 0  # the HTTP status of the refusal
