"""Strict response headers, and the checks every POST passes: same origin (Origin, else Referer, must be
an address this server is served at, as the app was told when it was made; never the request's own Host
header, which whoever sends the request chooses) and the rater's CSRF token (an HMAC of the rater id under
the study's secret).

Raters are identified by the unguessable token in their link, never by a cookie, so a foreign site
cannot ride on a rater's session; the origin and CSRF checks are a second and third line.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from fastapi import HTTPException, Request, Response

from .origins import origin_of
from .study import Study

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # the token in the URL never leaves this site in a Referer
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


async def add_headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    response = await call_next(request)
    response.headers.update(HEADERS)
    return response


def same_origin(request: Request, origins: frozenset[str]) -> bool:
    """The request comes from a page of this server: its Origin (or, without one, its Referer) is one of
    ``origins``, the addresses the server is served at. A request with neither is refused."""
    origin = request.headers.get("origin")
    sent_from = origin if origin is not None else request.headers.get("referer")
    return sent_from is not None and origin_of(sent_from) in origins


async def posted_form(request: Request) -> dict[str, str]:
    """The posted form fields (each at most once), after the same-origin check against the addresses
    ``create_app`` was given (``app.state.origins``)."""
    if not same_origin(request, request.app.state.origins):
        raise HTTPException(403, "This form was posted from another site and was refused.")
    form = await request.form()
    out: dict[str, str] = {}
    for name, value in form.multi_items():
        if not isinstance(value, str):
            raise HTTPException(400, "Files cannot be uploaded here.")
        if name in out:
            raise HTTPException(400, f"The field {name[:40]!r} was sent twice.")
        out[name] = value
    return out


def check_csrf(study: Study, rater_id: str, form: dict[str, str]) -> None:
    if not hmac.compare_digest(form.get("csrf", "").encode(), study.csrf_token(rater_id).encode()):
        raise HTTPException(403, "This form is out of date or was not sent from your rating page. Reload the page.")
