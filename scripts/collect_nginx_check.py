"""The "Run it publicly" recipe of docs/collect.md, run for real: nginx in front of ``harness collect serve``.

Starts the example sentence-completion study (copied into a temporary folder) under ``--root-path /cloze1
--allowed-host studies.example.org`` and nginx (Debian's ``nginx``, on 127.0.0.1:8088) with the docs' ``location``
block, then checks through the proxy: joining, consent and an answer under the public host; a forged ``Host``
refused with 400; and the join limit per address (nginx overwrites a client's own ``X-Forwarded-For`` with the real
address, so forging it does not get round the limit). Prints one line per check; exits 1 if one fails.

    .venv/bin/python scripts/collect_nginx_check.py
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
LOCATION = """
    location /cloze1/ {
        access_log off;
        proxy_pass http://127.0.0.1:8765/;
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header X-Forwarded-For $remote_addr;
    }"""


def nginx_conf(folder: Path) -> str:
    temp = " ".join(f"{k}_temp_path {folder / k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (
        f"worker_processes 1; pid {folder / 'nginx.pid'}; error_log {folder / 'error.log'};\n"
        "events { worker_connections 64; }\n"
        f"http {{ {temp}\n  server {{ listen 127.0.0.1:8088; {LOCATION}\n  }}\n}}\n"
    )


def main() -> int:
    if shutil.which("nginx") is None:
        print("nginx is not installed (apt-get install nginx)", file=sys.stderr)
        return 1
    folder = Path(tempfile.mkdtemp(prefix="collect-nginx-"))
    for name in ("sentence-completion.yaml", "sentences.csv"):
        shutil.copy(REPO / "examples" / "collect" / name, folder / name)
    (folder / "nginx.conf").write_text(nginx_conf(folder), encoding="utf-8")
    db = folder / "sc.sqlite"
    server = subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "harness"), "collect", "serve", str(folder / "sentence-completion.yaml"),
         "--db", str(db), "--port", "8765", "--root-path", "/cloze1", "--allowed-host", "studies.example.org"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    while "serving" not in server.stdout.readline():
        if server.poll() is not None:
            print("the server did not start", file=sys.stderr)
            return 1
    subprocess.run(["nginx", "-c", str(folder / "nginx.conf")], check=True)
    time.sleep(0.5)
    try:
        results = checks(db)
    finally:
        subprocess.run(["nginx", "-c", str(folder / "nginx.conf"), "-s", "stop"], check=False)
        server.terminate()
        server.wait(timeout=30)
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
    return 0 if all(ok for _, ok, _ in results) else 1


def checks(db: Path) -> list[tuple[str, bool, str]]:
    base, host = "http://127.0.0.1:8088/cloze1", {"Host": "studies.example.org:8088"}
    client = httpx.Client(follow_redirects=False, timeout=10)
    out = []
    joined = client.get(base + "/?PROLIFIC_PID=ngx-1", headers=host)
    out.append(("join", joined.status_code == 303 and joined.headers["location"] == "/cloze1/study",
                f"{joined.status_code} to {joined.headers.get('location')}"))  # fmt: skip
    info = client.get(base + "/api/state", headers=host).json()
    headers = {**host, "Origin": "http://studies.example.org:8088", "X-CSRF-Token": info["csrf"],
               "Content-Type": "application/json"}  # fmt: skip
    state = client.post(base + "/api/consent", content=b"{}", headers=headers).json()["state"]
    body = json.dumps({"seq": state["seq"], "step": state["step"], "answer": "word"}).encode()
    answer = client.post(base + "/api/answer", content=body, headers=headers)
    out.append(("consent and an answer", answer.status_code == 200, f"{answer.status_code} {answer.json()['stored']}"))
    forged = {**headers, "Host": "evil.example", "Origin": "http://evil.example"}
    refused = client.post(base + "/api/answer", content=body, headers=forged)
    out.append(("a forged Host", refused.status_code == 400, f"{refused.status_code} {refused.json()['error']}"))
    codes = [
        httpx.get(base + f"/?PROLIFIC_PID=many-{i}", headers={**host, "X-Forwarded-For": f"10.0.0.{i}"}).status_code
        for i in range(21)
    ]
    out.append(("21 more joins from one address, each forging X-Forwarded-For", codes == [303] * 19 + [429] * 2,
                f"{codes.count(303)} joined, {codes.count(429)} refused with 429"))  # fmt: skip
    with sqlite3.connect(db) as conn:
        people, answers = (
            conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("participants", "responses")
        )
    out.append(("the database", (people, answers) == (20, 1), f"{people} participants, {answers} response"))
    return out


if __name__ == "__main__":
    sys.exit(main())
