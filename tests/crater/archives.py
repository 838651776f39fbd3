"""Wheels, sdists and a package index made on disk for the crater's tests (no network)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path


def wheel(
    folder: Path, name: str, version: str, files: dict[str, str], requires: list[str]
) -> Path:
    """A wheel of ``files`` with its METADATA and RECORD (sha256 of each file)."""
    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
    )
    record = []
    for path, text in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    members[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in members.items():
            archive.writestr(member, text)
    return path


def sdist(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """An sdist: ``NAME-VERSION/`` holding ``files`` and PKG-INFO."""
    stem = f"{name.replace('-', '_')}-{version}"
    members = {**files, "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"}
    path = folder / f"{stem}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for member, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{stem}/{member}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def index(root: Path, files: dict[str, list[Path]], corrupt: bool = False) -> str:
    """A PEP 503 index at ``root`` serving ``{project: [files]}``; its ``file://`` URL.
    ``corrupt``: every link carries a wrong sha256."""
    for project, paths in files.items():
        page = root / project
        page.mkdir(parents=True, exist_ok=True)
        links = []
        for path in paths:
            digest = "0" * 64 if corrupt else hashlib.sha256(path.read_bytes()).hexdigest()
            links.append(f'<a href="{path.as_uri()}#sha256={digest}">{path.name}</a>')
        (page / "index.html").write_text("<html><body>" + "\n".join(links) + "</body></html>")
    return root.as_uri()


@contextlib.contextmanager
def json_index(
    files: dict[str, list[tuple[Path, str]]], pages: dict[str, bytes] | None = None
) -> Iterator[str]:
    """A PEP 691 index on loopback serving ``{project: [(file, upload time)]}`` with each
    file's PEP 700 ``upload-time``; yields its root URL.  The files stay on disk
    (``file://`` links): only names are needed of a release never fetched.  ``pages``:
    more answers, by path (``/simple/x/``), as they are."""
    pages = dict(pages or {})
    for project, entries in files.items():
        listed = [
            {
                "filename": path.name,
                "url": path.as_uri(),
                "hashes": {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
                if path.exists()
                else {},
                "upload-time": uploaded,
            }
            for path, uploaded in entries
        ]
        pages[f"/simple/{project}/"] = json.dumps(
            {"meta": {"api-version": "1.1"}, "name": project, "files": listed}
        ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()
