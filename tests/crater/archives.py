"""Wheels, sdists and a package index made on disk for the crater's tests (no network)."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import zipfile
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
