"""`python -m bench._git_http ROOT`: the repositories under ROOT (`NAME.git`) served over smart
HTTP by C git's `git upload-pack --stateless-rpc`, on a loopback port it prints.

As hosts serve git (GitLab's Gitaly, for one, runs `upload-pack --stateless-rpc` for each
request): no CGI wrapper (`git http-backend` is one more git process per request, which only
relays to upload-pack), and git writes its answer straight into the client's connection, no
copy through this process. The answer ends when the connection closes (HTTP/1.0).

A process of its own, as a git host is: the server's work still runs on this machine while an
import waits for it, but not inside the importing process, where it would contend for the GIL
with the import it serves.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_ROUTE = re.compile(r"/([A-Za-z0-9_.-]+\.git)/(info/refs\?service=git-upload-pack|git-upload-pack)")
_REQUEST_TYPE = "application/x-git-upload-pack-request"
_MAX_REQUEST = 1 << 20  # a fetch's wants and haves


def pkt_line(text: bytes) -> bytes:
    return f"{len(text) + 4:04x}".encode() + text


class GitHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # git's output ends the answer: the connection closes
    root: Path

    def do_GET(self) -> None:
        repo = self._repo("info/refs?service=git-upload-pack")
        if repo is None:
            return
        self._start("application/x-git-upload-pack-advertisement")
        if "version=2" not in self._git_protocol():  # v2 advertises no service line
            self.wfile.write(pkt_line(b"# service=git-upload-pack\n") + b"0000")
            self.wfile.flush()
        self._upload_pack(repo, b"", "--advertise-refs")

    def do_POST(self) -> None:
        repo = self._repo("git-upload-pack")
        if repo is None:
            return
        length = int(self.headers.get("Content-Length") or -1)
        if self.headers.get("Content-Type") != _REQUEST_TYPE or not 0 <= length <= _MAX_REQUEST:
            self.send_error(400, "not an upload-pack request")
            return
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self._start("application/x-git-upload-pack-result")
        self._upload_pack(repo, body)

    def _repo(self, service: str) -> Path | None:
        found = _ROUTE.fullmatch(self.path)
        repo = self.root / found.group(1) if found and found.group(2) == service else None
        if repo is None or not repo.is_dir():
            self.send_error(404)
            return None
        return repo

    def _git_protocol(self) -> str:
        return self.headers.get("Git-Protocol", "")

    def _start(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.flush()

    def _upload_pack(self, repo: Path, request: bytes, *options: str) -> None:
        """git answers `request` straight into the connection."""
        env = {"PATH": os.environ.get("PATH", ""), "GIT_PROTOCOL": self._git_protocol()}
        process = subprocess.Popen(
            ["git", "upload-pack", "--stateless-rpc", *options, str(repo)],
            stdin=subprocess.PIPE,
            stdout=self.connection.fileno(),
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert process.stdin is not None
        process.stdin.write(request)  # a fetch's request is small: no deadlock on the pipes
        process.stdin.close()
        process.wait()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


def serve(root: Path) -> ThreadingHTTPServer:
    handler = type("Handler", (GitHandler,), {"root": root})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    return server


def main() -> None:
    server = serve(Path(sys.argv[1]))
    with server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        print(server.server_address[1], flush=True)
        sys.stdin.read()  # until the benchmark closes our stdin
        server.shutdown()


if __name__ == "__main__":
    main()
