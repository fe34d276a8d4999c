"""The upload collector: the file's bytes and the digest taken as they arrive, however the body
is cut into chunks."""

from __future__ import annotations

import hashlib
import os

import httpx
import pytest

from backend.api.upload import MultipartFile
from backend.errors import InvalidRequest


def _multipart(files: dict[str, tuple[str, bytes]]) -> tuple[bytes, bytes]:
    request = httpx.Request("POST", "http://test/", files=files)
    boundary = request.headers["content-type"].split("boundary=", 1)[1]
    return request.read(), boundary.encode()


@pytest.mark.parametrize("size", [1, 7, 4096, 65536])
def test_the_file_part_and_its_digest_whatever_the_chunks(size: int) -> None:
    archive = os.urandom(300_000) + b"\r\n--" + os.urandom(1000)  # a boundary-like run inside
    body, boundary = _multipart({"other": ("a.txt", b"before"), "file": ("p.zip", archive)})
    collector = MultipartFile(boundary, lambda _size: None)
    for start in range(0, len(body), size):
        collector.write(body[start : start + size])
    received = collector.file()
    assert received.data == archive
    assert received.sha256 == hashlib.sha256(archive).hexdigest()
    assert collector.filename == "p.zip"


def test_the_size_check_sees_the_running_size_of_the_file_only() -> None:
    body, boundary = _multipart({"file": ("p.zip", b"x" * 5000)})
    seen: list[int] = []
    collector = MultipartFile(boundary, seen.append)
    for start in range(0, len(body), 1000):
        collector.write(body[start : start + 1000])
    assert seen and seen == sorted(seen) and seen[-1] == 5000


def test_a_body_without_the_file_field_is_refused() -> None:
    body, boundary = _multipart({"other": ("a.txt", b"data")})
    collector = MultipartFile(boundary, lambda _size: None)
    collector.write(body)
    with pytest.raises(InvalidRequest) as caught:
        collector.file()
    assert caught.value.code == "file_missing"
