"""The study server over real HTTP: the real uvicorn server on 127.0.0.1, the real SQLite database, httpx as the
participant's browser.

What must hold: a participant goes from the study link to the completion code; coming back with the same platform
id continues at the same step; and every malformed, foreign or replayed request is refused with its status and
leaves the database exactly as it was (the rows are read back after each). Nothing anyone typed appears unescaped
in a page. The ``serve`` entry point (its one announcement line, a clean exit on SIGTERM) runs in a subprocess
(slow)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.collect.guard import HttpRefusal, parse_object
from tests.collect_server import ADMIN_TOKEN, CLOZE_STUDY, Running, running_server, write_study

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    with running_server(write_study(tmp_path)) as running:
        yield running


def _client(server: Running) -> Any:
    return httpx.Client(base_url=server.url, follow_redirects=False, timeout=20)


def _join(server: Running, pid: str | None = "p1") -> tuple[Any, dict[str, Any]]:
    """A participant's client after opening the study link (and its first state)."""
    client = _client(server)
    response = client.get("/", params={"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": "x"} if pid else None)
    assert response.status_code == 303 and response.headers["location"] == "/study"
    state = client.get("/api/state")
    assert state.status_code == 200
    return client, state.json()


def _headers(info: dict[str, Any], **extra: str) -> dict[str, str]:
    return {"X-CSRF-Token": info["csrf"], "Content-Type": "application/json", **extra}


def _post(client: Any, info: dict[str, Any], path: str, body: Any, **headers: str) -> Any:
    return client.post(path, content=json.dumps(body).encode(), headers=_headers(info, **headers))


def _answer_for(state: dict[str, Any]) -> str:
    return "apple" if state["role"] == "catch" else "word"


def _consented(server: Running, pid: str = "p1") -> tuple[Any, dict[str, Any], dict[str, Any]]:
    client, info = _join(server, pid)
    response = _post(client, info, "/api/consent", {})
    assert response.status_code == 200, response.text
    return client, info, response.json()["state"]


# ------------------------------------------------------------------------------------------------ the happy path


def test_a_participant_goes_from_the_link_to_the_completion_code(server: Running) -> None:
    client = _client(server)
    entry = client.get("/?PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=x")
    assert entry.status_code == 303 and entry.headers["location"] == "/study"
    cookie = entry.headers["set-cookie"]
    assert cookie.startswith("hc_session=") and "HttpOnly" in cookie and "Path=/;" in cookie
    assert "samesite=lax" in cookie.lower() and "secure" not in cookie.lower()
    page = client.get("/study")
    assert page.status_code == 200 and 'src="static/study.js"' in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer" and page.headers["cache-control"] == "no-store"
    for asset in ("/static/study.js", "/static/study.css", "/static/admin.css", "/static/favicon.svg"):
        assert client.get(asset).status_code == 200

    info = client.get("/api/state").json()
    assert info["kind"] == "passage_cloze" and info["state"] == {"phase": "consent"}
    assert info["texts"]["instructions"] == "Guess each next word of the passage." and info["response_seconds"] is None
    state = _post(client, info, "/api/consent", {}).json()["state"]
    sent = []
    while state["phase"] == "item":
        answer = _answer_for(state)
        response = _post(client, info, "/api/answer", {"seq": state["seq"], "step": state["step"], "answer": answer,
                                                       "client_ms": 1200, "timed_out": False})  # fmt: skip
        assert response.status_code == 200, response.text
        result = response.json()
        assert result["stored"] is True
        sent.append((state["seq"], state["step"], answer))
        state = result["state"]
    assert state["phase"] == "complete" and state["code"] == "C0MPLETE" and not state["early"]
    assert state["url"] == "https://example.org/done?cc=C0MPLETE"
    # Practice (3 steps), a passage, a check, a passage, a check: every answer stored once, as sent.
    assert [(seq, step, answer) for _, seq, step, answer, _, _ in server.rows()] == sent
    roles = [r[0] for r in server.rows("SELECT role FROM assignments ORDER BY seq")]
    assert roles == ["practice", "main", "catch", "main", "catch"]
    assert server.rows("SELECT external_id, status FROM participants") == [("p1", "complete")]
    # Finished: another answer is refused, the state stays complete.
    late = _post(client, info, "/api/answer", {"seq": 5, "step": 0, "answer": "x"})
    assert late.status_code == 409 and "error" in late.json()
    assert client.get("/healthz").text == "ok"


def test_coming_back_with_the_same_platform_id_continues_at_the_same_step(server: Running) -> None:
    client, info, state = _consented(server, "p-back")
    for _ in range(2):
        state = _post(client, info, "/api/answer", {"seq": state["seq"], "step": state["step"], "answer": "w"}).json()[
            "state"
        ]
    assert (state["seq"], state["step"]) == (0, 2)
    again, info2 = _join(server, "p-back")  # another browser: same participant, same session, same step
    assert again.cookies["hc_session"] == client.cookies["hc_session"] and info2["csrf"] == info["csrf"]
    assert (info2["state"]["seq"], info2["state"]["step"], info2["state"]["view"]["context"]) == (0, 2, "One two three")
    # The cookie alone (no id in the link) is the same participant; another id is another participant.
    assert again.get("/").status_code == 303 and again.get("/api/state").json()["state"]["step"] == 2
    other, info3 = _join(server, "p-other")
    assert info3["state"] == {"phase": "consent"} and info3["csrf"] != info["csrf"]
    # No id and no cookie: a new participant with a generated id.
    _join(server, None)
    ids = [r[0] for r in server.rows("SELECT external_id FROM participants ORDER BY pid")]
    assert ids[:2] == ["p-back", "p-other"] and ids[2].startswith("anon-") and len(ids) == 3


def test_the_cookie_is_secure_behind_an_https_proxy(server: Running) -> None:
    response = _client(server).get("/?PROLIFIC_PID=p1", headers={"X-Forwarded-Proto": "https"})
    assert "secure" in response.headers["set-cookie"].lower()


def test_without_a_session_the_page_and_the_api_refuse(server: Running) -> None:
    client = _client(server)
    page = client.get("/study")
    assert page.status_code == 403 and "open the study link again" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert client.get("/api/state").status_code == 401
    client.cookies.set("hc_session", "not-a-session")
    assert client.get("/api/state").status_code == 401
    response = client.post("/api/answer", content=b"{}", headers={"Content-Type": "application/json"})
    assert response.status_code == 401 and response.json()["error"]
    assert client.get("/nowhere").headers["x-frame-options"] == "DENY"


# ------------------------------------------------------------------------------------------------ refusals


def _other_first(token: str) -> str:
    """``token`` with its first character changed (a fixed replacement would equal it for 1 token in 64)."""
    return ("y" if token[0] == "x" else "x") + token[1:]


def _bad_requests(info: dict[str, Any], state: dict[str, Any]) -> list[tuple[str, dict[str, str], bytes, int]]:
    ok = {"seq": state["seq"], "step": state["step"], "answer": "two", "client_ms": 10, "timed_out": False}
    good = _headers(info)

    def body(**changes: Any) -> bytes:
        return json.dumps({**ok, **changes}).encode()

    return [
        ("body over 4 KiB", good, body(answer="a" * 5000), 413),
        ("body over 4 KiB of spaces", good, body() + b" " * 5000, 413),
        ("not JSON", good, b"seq=0&step=0", 400),
        ("a JSON array", good, b'[0, 0, "two"]', 400),
        ("not UTF-8", good, b'{"seq": 0, "step": 0, "answer": "\xff\xfe"}', 400),
        ("NaN", good, b'{"seq": 0, "step": 0, "answer": "two", "client_ms": NaN}', 400),
        ("a key twice", good, b'{"seq": 0, "step": 0, "answer": "two", "answer": "three"}', 400),
        ("control characters", good, body(answer="tw\u0007o"), 422),
        ("a bidi override", good, body(answer="two\u202e"), 422),
        ("over 100 characters", good, body(answer="a" * 101), 422),
        ("an empty answer", good, body(answer=""), 422),
        ("a number for a word", good, body(answer=5), 422),
        ("a list for a word", good, body(answer=["two"]), 422),
        ("a string seq", good, body(seq="0"), 422),
        ("a boolean client_ms", good, body(client_ms=True), 422),
        ("an unknown field", good, body(extra=1), 422),
        ("no answer field", good, json.dumps({"seq": 0, "step": 0}).encode(), 422),
        ("no CSRF token", {"Content-Type": "application/json"}, body(), 403),
        ("a wrong CSRF token", {**good, "X-CSRF-Token": _other_first(info["csrf"])}, body(), 403),
        ("a foreign Origin", {**good, "Origin": "https://evil.example"}, body(), 403),
        ("Origin null", {**good, "Origin": "null"}, body(), 403),
        ("a form's content type", {**good, "Content-Type": "application/x-www-form-urlencoded"}, body(), 415),
        ("text/plain", {**good, "Content-Type": "text/plain"}, body(), 415),
        ("another charset", {**good, "Content-Type": "application/json; charset=latin-1"}, body(), 415),
        ("a step ahead", good, body(step=1), 409),
        ("another item", good, body(seq=1), 409),
    ]


def test_every_bad_request_is_refused_with_its_status_and_stores_nothing(server: Running) -> None:
    client, info, state = _consented(server)
    before = server.rows("SELECT * FROM responses"), server.rows("SELECT * FROM assignments")
    for label, headers, body, status in _bad_requests(info, state):
        response = client.post("/api/answer", content=body, headers=headers)
        assert response.status_code == status, (label, response.text)
        error = response.json()["error"]
        assert isinstance(error, str) and error and "\n" not in error, label
        assert response.headers["cache-control"] == "no-store"
        assert (server.rows("SELECT * FROM responses"), server.rows("SELECT * FROM assignments")) == before, label
    # The consent endpoint is guarded the same way.
    assert client.post("/api/consent", content=b"{}", headers={"Content-Type": "application/json"}).status_code == 403
    assert _post(client, info, "/api/consent", {"agree": True}).status_code == 422
    assert _post(client, info, "/api/consent", {}, Origin="http://localhost:1").status_code == 403
    # The page's own origin is accepted; then the same answer is stored once.
    good = _post(client, info, "/api/answer", {"seq": 0, "step": 0, "answer": "two"}, Origin=server.url)
    assert good.status_code == 200 and good.json()["feedback"] == {"target": "two", "correct": True}
    assert [r[1:4] for r in server.rows()] == [(0, 0, "two")]


def test_a_chunked_body_over_the_limit_is_refused_while_reading(server: Running) -> None:
    client, info, _ = _consented(server)

    def chunks() -> Iterator[bytes]:
        yield b'{"seq": 0, "step": 0, "answer": "'
        for _ in range(10):
            yield b"a" * 1000
        yield b'"}'

    response = client.post("/api/answer", content=chunks(), headers=_headers(info))
    assert "content-length" not in response.request.headers
    assert response.status_code == 413 and server.rows() == []


def test_a_replayed_answer_is_stored_once(server: Running) -> None:
    client, info, state = _consented(server)
    body = {"seq": state["seq"], "step": state["step"], "answer": "two", "client_ms": 900, "timed_out": False}
    first = _post(client, info, "/api/answer", body)
    second = _post(client, info, "/api/answer", body)
    assert (first.status_code, second.status_code) == (200, 409)
    assert "not the current step" in second.json()["error"]
    assert [r[1:4] for r in server.rows()] == [(0, 0, "two")]


def test_another_participants_step_is_refused_and_their_answers_stay(server: Running) -> None:
    a, info_a, state_a = _consented(server, "A")
    b, info_b, _ = _consented(server, "B")
    for answer in ("two", "three"):
        state_a = _post(a, info_a, "/api/answer", {"seq": state_a["seq"], "step": state_a["step"],
                                                   "answer": answer}).json()["state"]  # fmt: skip
    rows_a = server.rows()
    # B replays A's next step with B's own session and token: B is not there, so nothing is stored.
    stolen = _post(b, info_b, "/api/answer", {"seq": state_a["seq"], "step": state_a["step"], "answer": "evil"})
    assert stolen.status_code == 409
    # B's session with A's token is a CSRF failure.
    assert _post(b, info_a, "/api/answer", {"seq": 0, "step": 0, "answer": "evil"}).status_code == 403
    assert server.rows() == rows_a and [r[3] for r in rows_a] == ["two", "three"]


def test_a_timed_out_step_stores_an_empty_answer(tmp_path: Path) -> None:
    study = write_study(tmp_path, study=CLOZE_STUDY + "time_limits: {response_seconds: 5}\n")
    with running_server(study) as running:
        client, info, state = _consented(running)
        assert info["response_seconds"] == 5
        response = _post(client, info, "/api/answer", {"seq": 0, "step": 0, "answer": "", "timed_out": True})
        assert response.status_code == 200
        assert running.rows() == [(1, 0, 0, "", None, 1)]


# ------------------------------------------------------------------------------------------------ admin, escaping


def test_the_admin_pages_need_the_token(server: Running) -> None:
    client = _client(server)
    for path in ("/admin", "/admin/status.json"):
        assert client.get(path).status_code == 401
        assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get(path, headers={"Authorization": f"Basic {ADMIN_TOKEN}"}).status_code == 401
    assert client.get("/admin?token=wrong").status_code == 401
    report = client.get("/admin/status.json", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert report.status_code == 200 and report.json()["study"] == "cloze-test"
    page = client.get("/admin", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert page.status_code == 200 and "cloze-test" in page.text
    # The token in the link once: traded for an HttpOnly cookie, and the address no longer shows it.
    visit = client.get(f"/admin?token={ADMIN_TOKEN}")
    assert visit.status_code == 303 and visit.headers["location"] == "/admin"
    cookie = visit.headers["set-cookie"]
    assert "HttpOnly" in cookie and ADMIN_TOKEN not in cookie and "samesite=strict" in cookie.lower()
    assert client.get("/admin").status_code == 200
    assert client.get("/admin/status.json").status_code == 200
    forged = httpx.Client(base_url=server.url, cookies={"hc_admin": "forged"})
    assert forged.get("/admin").status_code == 401 and forged.get("/admin/status.json").status_code == 401


def test_nothing_a_participant_typed_appears_unescaped(server: Running) -> None:
    evil = "<script>alert(1)</script>"
    client, info, state = _consented(server, evil)
    response = _post(client, info, "/api/answer", {"seq": 0, "step": 0, "answer": "<img src=x onerror=alert(1)>"})
    assert response.status_code == 200
    assert server.rows("SELECT external_id FROM participants") == [(evil,)]
    with sqlite3.connect(server.db) as db:  # excluded, so the admin page lists the id and the reason
        db.execute("UPDATE participants SET status = 'excluded', excluded_reason = ?", (evil,))
    admin = _client(server)
    admin.headers["Authorization"] = f"Bearer {ADMIN_TOKEN}"
    pages = [client.get("/study").text, admin.get("/admin").text, admin.get("/nowhere").text]
    pages.append(_client(server).get("/", params={"PROLIFIC_PID": evil + "\u0007"}).text)  # a refused id
    for page in pages:
        assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[1]  # the admin page lists the id, escaped
    assert _client(server).get("/", params={"PROLIFIC_PID": "a\u0007b"}).status_code == 400


def test_behind_a_proxy_under_a_path(tmp_path: Path) -> None:
    """A proxy serving the study at https://host/study1/ strips the prefix (uvicorn's root_path): the server's
    redirects and cookies name the public path, and the page's relative links resolve under it."""
    with running_server(write_study(tmp_path), root_path="/study1") as running:
        client = _client(running)
        entry = client.get("/?PROLIFIC_PID=p1", headers={"X-Forwarded-Proto": "https"})
        assert entry.status_code == 303 and entry.headers["location"] == "/study1/study"
        assert "Path=/study1/" in entry.headers["set-cookie"] and "secure" in entry.headers["set-cookie"].lower()
        client.cookies.set("hc_session", entry.cookies["hc_session"])  # the cookie is the public path's
        assert client.get("/study").status_code == 200
        assert client.get("/static/study.js").status_code == 200
        info = client.get("/api/state").json()
        own = {"Origin": "https://example.org", "Host": "example.org", "X-Forwarded-Proto": "https"}
        assert _post(client, info, "/api/consent", {}, **own).status_code == 200
        foreign = {**own, "Origin": "https://example.org.evil.test"}
        assert _post(client, info, "/api/consent", {}, **foreign).status_code == 403


def test_an_unexpected_error_answers_500_with_the_headers_and_no_details(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, info, _ = _consented(server)

    def broken(*args: Any) -> Any:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(server.flow, "state", broken)
    response = client.get("/api/state")
    assert response.status_code == 500 and "secret" not in response.text and response.json()["error"]
    assert response.headers["x-frame-options"] == "DENY" and response.headers["cache-control"] == "no-store"
    monkeypatch.setattr(server.flow, "answer", broken)
    assert _post(client, info, "/api/answer", {"seq": 0, "step": 0, "answer": "x"}).status_code == 500
    assert server.rows() == []


def test_the_page_has_no_inline_script_or_style_and_never_writes_html() -> None:
    """What the Content-Security-Policy relies on, and what keeps typed text out of the markup."""
    collect = REPO / "harness" / "collect"
    lines = (collect / "static" / "study.js").read_text(encoding="utf-8").splitlines()
    code = "\n".join(line for line in lines if not line.lstrip().startswith("//"))
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in code, sink
    for template in (collect / "templates").glob("*.html"):
        html = template.read_text(encoding="utf-8")
        assert "style=" not in html and "<style" not in html and not re.search(r"\son[a-z]+=", html), template
        assert len(re.findall(r"<script\b", html)) == len(re.findall(r"<script src=", html)), template
        assert "|safe" not in html and "autoescape false" not in html, template


def test_the_body_parser_directly() -> None:
    assert parse_object(b'{"a": 1}') == {"a": 1}
    for bad in (b"", b"1", b'"x"', b"null", b"{", b'{"a": Infinity}', b"[" * 2000 + b"]" * 2000):
        with pytest.raises(HttpRefusal) as caught:
            parse_object(bad)
        assert caught.value.status == 400


def test_without_the_extra_the_server_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.collect import web
    from harness.errors import HarnessError

    monkeypatch.setitem(sys.modules, "uvicorn", None)
    with pytest.raises(HarnessError) as caught:
        web.require_extra()
    assert str(caught.value) == (
        "harness collect serve needs the 'collect' extra, which is not installed (no uvicorn): "
        "pip install 'variability-harness[collect]'"
    )


# ------------------------------------------------------------------------------------------------ serve()


@pytest.mark.slow
def test_serve_announces_itself_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    study = write_study(tmp_path)
    code = (
        "import sys; from pathlib import Path; from harness.collect.prepare import open_study; "
        "from harness.collect.web import serve; "
        "serve(open_study(Path(sys.argv[1])), port=0, admin_token='t0ken-for-tests')"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", code, str(study)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO, env=env)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        prefix = "harness collect: serving 'cloze-test' on http://127.0.0.1:"
        assert line.startswith(prefix) and line.endswith("/\n"), line
        url = line.split(" on ")[1].strip()
        assert httpx.get(url + "healthz", timeout=10).text == "ok"
        token = httpx.get(url + "admin/status.json", headers={"Authorization": "Bearer t0ken-for-tests"}, timeout=10)
        assert token.status_code == 200
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert rest == ""  # exactly one line on stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
