"""`python -m bench._git_http ROOT`: the repositories under ROOT served over smart HTTP by
`git http-backend` (CGI, as a web server runs it), on a loopback port it prints.

A process of its own, as a git host is: the server's work still runs on this machine while an
import waits for it, but not inside the importing process, where its relaying of the pack
would contend for the GIL with the import it serves. The answer is streamed as git writes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.wsgi import LoopbackWsgi

_CHUNK = 64 * 1024


class GitHttpServer(LoopbackWsgi):
    def __init__(self, project_root: Path) -> None:
        self.project_root = project_root
        super().__init__()

    def _app(self, environ: dict[str, Any], start: Any) -> Iterator[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        env = {
            "GIT_PROJECT_ROOT": str(self.project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": environ["PATH_INFO"],
            "QUERY_STRING": environ.get("QUERY_STRING", ""),
            "REQUEST_METHOD": environ["REQUEST_METHOD"],
            "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": environ.get("HTTP_GIT_PROTOCOL", ""),
            "PATH": os.environ.get("PATH", ""),
        }
        process = subprocess.Popen(
            ["git", "http-backend"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(body)  # a fetch's request is small: no deadlock on the pipes
        process.stdin.close()
        status, headers = "200 OK", []
        while line := process.stdout.readline().rstrip(b"\r\n"):
            key, _, value = line.decode().partition(": ")
            if key.lower() == "status":
                status = value
            else:
                headers.append((key, value))
        start(status, headers)
        return self._stream(process)

    @staticmethod
    def _stream(process: subprocess.Popen[bytes]) -> Iterator[bytes]:
        assert process.stdout is not None
        try:
            while chunk := process.stdout.read1(_CHUNK):
                yield chunk
        finally:
            process.stdout.close()
            process.wait()


def main() -> None:
    with GitHttpServer(Path(sys.argv[1])) as server:
        print(server.port, flush=True)
        sys.stdin.read()  # until the benchmark closes our stdin


if __name__ == "__main__":
    main()
