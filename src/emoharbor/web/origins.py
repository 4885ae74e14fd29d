"""The addresses (origins) the rating app is served at: where raters' pages come from, so where a form
may be posted from. Known when the server starts: its own address, and the public addresses that
``emoharbor study invite --base-url`` put in the raters' links (or ``serve --public-url``)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
ANY_ADDRESS = ("0.0.0.0", "::")


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL, lower-case, the port always written; None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:  # a port that is not a number
        return None
    host = (parts.hostname or "").lower()
    if parts.scheme.lower() not in DEFAULT_PORTS or not host:
        return None
    return f"{parts.scheme.lower()}://{f'[{host}]' if ':' in host else host}:{port}"


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def served_origins(host: str, port: int, public: list[str]) -> list[str]:
    """The origins of a server listening on ``host``:``port`` and reached at the ``public`` URLs too. On a
    loopback address it is also ``localhost``; on every interface (0.0.0.0), its loopback addresses (the
    other addresses it has are reached only through ``public``)."""
    names = ["127.0.0.1", "localhost"] if is_loopback(host) or host in ANY_ADDRESS else [host]
    own = [f"http://{f'[{n}]' if ':' in n else n}:{port}" for n in names]
    return [o for o in map(origin_of, [*own, *public]) if o is not None]
