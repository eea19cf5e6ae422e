"""The study server's guards on participant rows: the host allow-list, the join limit, placeholder ids.

What must hold, over real HTTP against the real database (read back after every case): a request naming a host the
study is not served under (``Host`` or ``X-Forwarded-Host``; DNS rebinding sends a forged ``Host`` with a matching
``Origin``) is refused with 400 and stores nothing, while ``/healthz`` always answers; a name given with
``--allowed-host`` works; one address may start ``joins_per_minute`` new participants a minute, the next gets 429
with ``Retry-After`` and no row, while a returning participant is never limited; a link still holding the
platform's placeholder creates nobody. The limiter's clock and the wildcard bind are unit-tested."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.collect.guard import (
    DEFAULT_JOINS_PER_MINUTE,
    AllowedHosts,
    HttpRefusal,
    JoinLimiter,
    allowed_host_name,
    client_key,
    placeholder_id,
)
from harness.errors import HarnessError
from tests.collect_server import Running, running_server, write_study

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

PARTICIPANTS = "SELECT external_id FROM participants ORDER BY pid"
RESPONSES = "SELECT COUNT(*) FROM responses"
REFUSED_EVIL = (
    "host 'evil.example' is not one this study is served under "
    "(start the server with --allowed-host evil.example if it is yours)"
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    """A server that allows only what it listens on (127.0.0.1) and limits joins as ``harness collect serve`` does."""
    with running_server(write_study(tmp_path), allowed_hosts=(), joins_per_minute=DEFAULT_JOINS_PER_MINUTE) as running:
        yield running


def _client(server: Running, **headers: str) -> Any:
    return httpx.Client(base_url=server.url, follow_redirects=False, timeout=20, headers=headers)


def _enter(client: Any, pid: str | None, **headers: str) -> Any:
    return client.get("/", params={"PROLIFIC_PID": pid} if pid is not None else None, headers=headers)


def _consented(server: Running, pid: str = "p1", **headers: str) -> tuple[Any, dict[str, Any]]:
    """A participant's client after joining and consenting, and its state (``headers`` on every request)."""
    client = _client(server, **headers)
    assert _enter(client, pid).status_code == 303
    info = client.get("/api/state").json()
    consent = client.post("/api/consent", content=b"{}", headers=_json_headers(info))
    assert consent.status_code == 200, consent.text
    return client, info


def _json_headers(info: dict[str, Any], **extra: str) -> dict[str, str]:
    return {"X-CSRF-Token": info["csrf"], "Content-Type": "application/json", **extra}


def _answer(client: Any, info: dict[str, Any], **headers: str) -> Any:
    body = json.dumps({"seq": 0, "step": 0, "answer": "two"}).encode()
    return client.post("/api/answer", content=body, headers=_json_headers(info, **headers))


def _count(server: Running, query: str = RESPONSES) -> int:
    return int(server.rows(query)[0][0])


# ------------------------------------------------------------------------------------------------ the host allow-list


def test_a_forged_host_with_a_matching_origin_stores_no_answer(server: Running) -> None:
    client, info = _consented(server)
    forged = _answer(client, info, Host="evil.example", Origin="http://evil.example")
    assert forged.status_code == 400 and forged.json() == {"error": REFUSED_EVIL}
    assert forged.headers["x-frame-options"] == "DENY" and forged.headers["cache-control"] == "no-store"
    assert _count(server) == 0
    # The same answer from the server's own address is stored, once.
    assert _answer(client, info, Origin=server.url).status_code == 200 and _count(server) == 1


def test_a_forged_host_opening_the_link_creates_no_participant(server: Running) -> None:
    client = _client(server)
    for path in ("/?PROLIFIC_PID=rebound", "/study", "/admin", "/static/study.js"):
        page = client.get(path, headers={"Host": "evil.example:8000"})
        assert page.status_code == 400, path
        assert page.headers["content-security-policy"].startswith("default-src 'self'"), path
    assert "with --allowed-host evil.example if it is yours" in page.text and "set-cookie" not in page.headers
    assert client.get("/api/state", headers={"Host": "EVIL.example."}).json() == {"error": REFUSED_EVIL}
    assert client.get("/", params={"PROLIFIC_PID": "x"}, headers={"Host": "bad host"}).status_code == 400
    assert server.rows(PARTICIPANTS) == []


def test_a_forged_forwarded_host_is_refused(server: Running) -> None:
    client, info = _consented(server)
    forged = _answer(client, info, **{"X-Forwarded-Host": "evil.example, 127.0.0.1", "Origin": "http://evil.example"})
    assert forged.status_code == 400 and forged.json() == {"error": REFUSED_EVIL}
    entry = _enter(_client(server), "p2", **{"X-Forwarded-Host": "evil.example"})
    assert entry.status_code == 400 and _count(server) == 0
    assert server.rows(PARTICIPANTS) == [("p1",)]


def test_a_name_given_with_allowed_host_is_served(tmp_path: Path) -> None:
    public = {"X-Forwarded-Host": "study.example.org"}
    with running_server(write_study(tmp_path), allowed_hosts=("Study.Example.org",)) as running:
        # Behind a proxy: Host is the server's own address, X-Forwarded-Host the public name.
        client, info = _consented(running, "p1", **public)
        origin = "http://study.example.org"
        assert _answer(client, info, Origin=origin).status_code == 200
        assert _answer(client, info, Origin=origin).status_code == 409  # a replay: still stored once
        # The public name as Host (a proxy that passes it on) works too; another name does not.
        assert _enter(_client(running), "p2", Host="study.example.org").status_code == 303
        assert _enter(_client(running), "p3", Host="other.example.org").status_code == 400
        assert running.rows("SELECT pid, seq, step, answer FROM responses") == [(1, 0, 0, "two")]
        assert running.rows(PARTICIPANTS) == [("p1",), ("p2",)]


def test_healthz_always_answers(server: Running) -> None:
    client = _client(server)
    for headers in ({"Host": "evil.example"}, {"X-Forwarded-Host": "evil.example"}, {}):
        response = client.get("/healthz", headers=headers)
        assert response.status_code == 200 and response.text == "ok"


def test_the_allowed_hosts_of_each_kind_of_bind_address() -> None:
    loopback = AllowedHosts("127.0.0.1")
    assert all(loopback.allows(h) for h in ("127.0.0.1", "localhost", "LocalHost.", "::1"))
    assert not any(loopback.allows(h) for h in ("evil.example", "10.0.0.1", "127.0.0.2", "localhost.evil.example"))
    loopback.check({"host": "[::1]:8000"})
    loopback.check({"host": "localhost:8000", "x-forwarded-host": "127.0.0.1"})
    # Every interface: any IP literal (DNS rebinding needs a name), and the names given.
    for wildcard in ("0.0.0.0", "::", "[::]"):
        hosts = AllowedHosts(wildcard, ["study.example.org"])
        assert all(hosts.allows(h) for h in ("203.0.113.5", "127.0.0.1", "2001:db8::1", "study.example.org"))
        assert not any(hosts.allows(h) for h in ("evil.example", "localhost", "203.0.113.5.evil.example"))
        hosts.check({"host": "[2001:db8::1]:443"})
    # One address: that address only, plus the names given; a leading dot admits the names under it.
    lan = AllowedHosts("192.168.1.5", [".example.org", "[2001:db8::2]"])
    assert all(lan.allows(h) for h in ("192.168.1.5", "example.org", "a.b.example.org", "2001:db8::2"))
    assert not any(lan.allows(h) for h in ("127.0.0.1", "localhost", "badexample.org", "example.org.evil.test"))
    for headers, shown in (({"host": "evil.example"}, "evil.example"), ({}, "''"), ({"host": "a/b"}, "'a/b'")):
        with pytest.raises(HttpRefusal) as caught:
            lan.check(headers)
        assert caught.value.status == 400 and shown in caught.value.message


def test_a_wrong_allowed_host_is_refused_in_one_line() -> None:
    assert allowed_host_name(" Study.Example.ORG. ") == "study.example.org" and allowed_host_name("[::1]") == "::1"
    for bad in ("https://study.example.org", "study.example.org:443", "*.example.org", "", "a b", "example.org/x"):
        with pytest.raises(HarnessError) as caught:
            AllowedHosts("127.0.0.1", [bad])
        assert "--allowed-host" in str(caught.value) and "\n" not in str(caught.value)


# ------------------------------------------------------------------------------------------------ the join limit


def test_one_address_may_start_twenty_participants_a_minute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.collect import web

    # The server's limiter on a stopped clock: however slow the joins, none is refilled meanwhile.
    monkeypatch.setattr(web, "JoinLimiter", lambda per_minute: JoinLimiter(per_minute, clock=lambda: 0.0))
    with running_server(write_study(tmp_path), joins_per_minute=DEFAULT_JOINS_PER_MINUTE) as server:
        _twenty_joins_then_refused(server)


def _twenty_joins_then_refused(server: Running) -> None:
    clients = []
    for i in range(DEFAULT_JOINS_PER_MINUTE):
        client = _client(server)
        assert _enter(client, f"p{i:02d}").status_code == 303, i
        clients.append(client)
    refused = _enter(_client(server), "p20")
    assert refused.status_code == 429 and refused.headers["retry-after"] == "3"  # one join every 3 seconds
    assert "Too many people started this study from your network in the last minute." in refused.text
    assert refused.headers["x-frame-options"] == "DENY" and "set-cookie" not in refused.headers
    assert _enter(_client(server), None).status_code == 429  # no id: a generated one would be new too
    assert _count(server, "SELECT COUNT(*) FROM participants") == DEFAULT_JOINS_PER_MINUTE
    # Returning participants are not limited: by their id (another browser), or by their cookie alone.
    assert _enter(_client(server), "p03").status_code == 303
    assert _enter(clients[5], None).status_code == 303 and clients[5].get("/api/state").status_code == 200
    # A cookie does not let its holder start others.
    assert _enter(clients[6], "someone-new").status_code == 429
    # Another address (forwarded by a trusted proxy on 127.0.0.1) has its own limit.
    assert _enter(_client(server), "p21", **{"X-Forwarded-For": "203.0.113.7"}).status_code == 303
    assert _count(server, "SELECT COUNT(*) FROM participants") == DEFAULT_JOINS_PER_MINUTE + 1
    assert ("p20",) not in server.rows(PARTICIPANTS) and ("someone-new",) not in server.rows(PARTICIPANTS)


def test_the_join_limiter_refills_with_time_and_forgets_idle_addresses() -> None:
    now = [1000.0]
    limiter = JoinLimiter(20, clock=lambda: now[0])
    assert [limiter.take("192.0.2.1") for _ in range(20)] == [0] * 20
    assert limiter.take("192.0.2.1") == 3  # one join every 3 seconds
    assert limiter.take("192.0.2.2") == 0  # another address
    now[0] += 3.5
    assert limiter.take("192.0.2.1") == 0 and limiter.take("192.0.2.1") == 3
    now[0] += 61  # a minute later: a full burst again, and the idle addresses are forgotten
    assert [limiter.take("192.0.2.1") for _ in range(20)] == [0] * 20 and len(limiter) == 1
    # IPv6 clients count by their /64 network; an IPv4-mapped address as IPv4.
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert client_key("::ffff:192.0.2.1") == "192.0.2.1" and client_key(None) == "unknown"
    # Bounded: the least recently seen address is forgotten first.
    small = JoinLimiter(1, clock=lambda: now[0], max_addresses=3)
    assert [small.take(f"198.51.100.{i}") for i in range(5)] == [0] * 5 and len(small) == 3
    assert small.take("198.51.100.4") == 60 and small.take("198.51.100.0") == 0
    # 0: no limit.
    assert all(JoinLimiter(0).take("192.0.2.1") == 0 for _ in range(1000))
    with pytest.raises(HarnessError):
        JoinLimiter(-1)


# ------------------------------------------------------------------------------------------------ placeholder ids


@pytest.mark.parametrize("placeholder", ["{{%PROLIFIC_PID%}}", "%PROLIFIC_PID%", "${workerId}"])
def test_a_platform_placeholder_is_not_a_participant_id(server: Running, placeholder: str) -> None:
    page = _enter(_client(server), placeholder)
    assert page.status_code == 400 and "set-cookie" not in page.headers
    escaped = placeholder.replace("&", "&amp;").replace("<", "&lt;")
    assert f"This link still holds the platform&#39;s placeholder {escaped} instead of your id" in page.text
    assert "Please open the study from the study platform." in page.text
    assert server.rows(PARTICIPANTS) == []
    assert _enter(_client(server), "5f1a2b3c4d5e6f7a8b9c0d1e").status_code == 303
    assert server.rows(PARTICIPANTS) == [("5f1a2b3c4d5e6f7a8b9c0d1e",)]


def test_which_ids_are_placeholders() -> None:
    placeholders = ["{{%PROLIFIC_PID%}}", "%PROLIFIC_PID%", "${workerId}", "${e://Field/PROLIFIC_PID}",
                    "[workerId]", "{PID}", "<participant_id>", "%7B%7B%25PROLIFIC_PID%25%7D%7D", "x{{y"]  # fmt: skip
    ids = ["5f1a2b3c4d5e6f7a8b9c0d1e", "A1B2C3D4E5F6G7", "anon-1234", "50%", "a%b", "100% sure", "[1]", "p{1}"]
    assert [p for p in placeholders if not placeholder_id(p)] == []
    assert [i for i in ids if placeholder_id(i)] == []
