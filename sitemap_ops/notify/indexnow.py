"""The IndexNow protocol client: one JSON POST per batch, answers handled as the protocol documents them."""

from __future__ import annotations

import email.utils
import http.client
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from sitemap_ops.deadline import within
from sitemap_ops.notify.exceptions import IndexNowRejectedError

# https://www.indexnow.org/documentation ("Response format"): what each refusal means.
_REFUSALS = {
    400: "bad request (the submission's format is invalid)",
    403: "forbidden (the key is not valid: the key file is missing or does not hold the key)",
    422: "unprocessable (a URL is not on the host, or the key does not match the protocol's schema)",
}
_MAX_BACKOFF_SECONDS = 60.0


@dataclass(frozen=True)
class Submission:
    """Where and as whom to submit: the endpoint, the host the URLs are on, the key and its file's URL."""

    endpoint: str
    host: str
    key: str
    key_location: str
    timeout: float

    def __repr__(self) -> str:  # the key is never shown
        return f"Submission(endpoint={self.endpoint!r}, host={self.host!r})"


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds, or an HTTP date)."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):  # not a date either: the backoff decides
        return None
    return max(0.0, when.timestamp() - time.time())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer of its own, never followed: the endpoint is the one the config names (a 301 or 302
    to another host is no acceptance)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def _status(request: urllib.request.Request, timeout: float, deadline: float) -> int:
    """The status of one request's answer, within `deadline` (time.monotonic()) in all (TimeoutError after it).
    HTTPError for an answer that is not 2xx."""

    def send() -> int:
        with _OPENER.open(request, timeout=timeout) as answer:
            return int(answer.status)

    return within(deadline, send, "the IndexNow endpoint's answer")


def post_batch(submission: Submission, urls: list[str], deadline: float) -> bool:
    """POST one batch; True when accepted (200 or 202). Retries 429 (after Retry-After), 5xx and dropped
    connections with backoff while the wait ends before `deadline` (time.monotonic()); False when it does not
    (the batch stays queued). IndexNowRejectedError for the answers retrying cannot fix."""
    body = json.dumps(
        {"host": submission.host, "key": submission.key, "keyLocation": submission.key_location, "urlList": urls}
    ).encode("utf-8")
    backoff = 1.0
    while True:
        request = urllib.request.Request(  # noqa: S310 (the endpoint is checked to be http(s) in the config)
            submission.endpoint,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json; charset=utf-8", "User-Agent": "sitemap-ops"},
        )
        wait = backoff
        try:
            if 200 <= _status(request, submission.timeout, deadline) < 300:  # 200 OK, 202 Accepted
                return True  # (the key is checked later)
        except urllib.error.HTTPError as exc:
            code = exc.code
            if code == 429:
                wait = _retry_after(exc.headers.get("Retry-After")) or backoff
            elif code < 500:
                reason = _REFUSALS.get(code, exc.reason or "refused")
                if 300 <= code < 400:  # (never followed: see _NoRedirect)
                    reason = (
                        f"a redirect to {exc.headers.get('Location')} (set indexnow.endpoint to an endpoint itself)"
                    )
                refused = IndexNowRejectedError(
                    f"IndexNow at {submission.endpoint} refused the submission: HTTP {code} {reason}"
                )
                refused.status = code
                raise refused from None
        except (urllib.error.URLError, http.client.HTTPException, OSError):
            pass  # a dropped connection or a timeout: retried like a 5xx
        if time.monotonic() + wait > deadline:
            return False
        time.sleep(wait)
        backoff = min(backoff * 2, _MAX_BACKOFF_SECONDS)
