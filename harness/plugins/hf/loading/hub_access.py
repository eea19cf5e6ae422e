"""Whether a hub id may reach the Hugging Face hub, or must be loaded from the local hub cache only.

Offline mode (any of :data:`OFFLINE_VARIABLES`) skips the network outright. Otherwise a quick TCP probe
(:func:`hub_unreachable`) decides: without it an offline machine spends about 50 s in the hub client's retries before
the load fails, while a cached model would have loaded at once.
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.parse
import urllib.request

#: Environment variables that keep hub ids off the network: the Hugging Face libraries' own, and the harness's.
OFFLINE_VARIABLES: tuple[str, ...] = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HARNESS_OFFLINE")

#: Seconds the reachability probe waits for a TCP connection to the hub (or its proxy) before loading cache-only.
HUB_PROBE_TIMEOUT = 3.0


def _offline_variable() -> str | None:
    """The first of :data:`OFFLINE_VARIABLES` set to a true value (read at call time, not import), or None."""
    for var in OFFLINE_VARIABLES:
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return var
    return None


def hub_endpoint() -> str:
    """The hub's base URL: ``$HF_ENDPOINT`` if set, else the one ``huggingface_hub`` was configured with."""
    env = os.environ.get("HF_ENDPOINT", "").strip()
    if env:
        return env.rstrip("/")
    try:
        from huggingface_hub import constants

        return str(constants.ENDPOINT).rstrip("/")
    except ImportError:  # pragma: no cover - transformers depends on huggingface_hub
        return "https://huggingface.co"


def hub_unreachable(endpoint: str | None = None, timeout: float = HUB_PROBE_TIMEOUT) -> str | None:
    """None when a TCP connection to the hub opens within ``timeout`` seconds, else why not (one short phrase).

    The connection goes to the proxy the environment names for the endpoint's scheme (``HTTPS_PROXY`` ...), unless
    ``NO_PROXY`` exempts the host. Name resolution counts against the timeout too: the probe runs in a daemon thread
    that is abandoned, not waited for, when it overruns. Without this probe an offline machine spends about 50 s in
    the hub client's retries before the load fails.
    """
    endpoint = endpoint or hub_endpoint()
    parts = urllib.parse.urlsplit(endpoint)
    scheme = parts.scheme or "https"
    host, port = parts.hostname, parts.port or (443 if scheme == "https" else 80)
    if not host:
        return f"the hub endpoint '{endpoint}' has no host name"
    target = f"the hub {endpoint}"
    proxy = urllib.request.getproxies().get(scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        proxy_parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if proxy_parts.hostname:
            host = proxy_parts.hostname
            port = proxy_parts.port or (443 if proxy_parts.scheme == "https" else 80)
            target = f"the proxy {proxy_parts.hostname}:{port} for the hub {endpoint}"
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                outcome.append(None)
        except OSError as exc:
            outcome.append(str(exc) or type(exc).__name__)

    thread = threading.Thread(target=connect, name="harness-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        return f"{target} is unreachable (no connection within {timeout:g} s)"
    return None if outcome[0] is None else f"{target} is unreachable ({outcome[0]})"


def hub_cache_only_reason() -> str | None:
    """Why a hub id must be loaded from the local hub cache only (offline mode, or no hub), or None to use the hub."""
    var = _offline_variable()
    if var is not None:
        return f"offline mode is on ({var} is set)"
    return hub_unreachable()
