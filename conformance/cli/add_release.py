"""Add a vLLM release to the suite in one command: ``nox -s add-release -- 0.34.0``.

``python -m conformance.cli.add_release VERSION | PATH`` (a published release, taken
from its wheel as ``--vllm-release`` takes it; or a wheel, a tree or an outputs.py text):

1. puts the release's texts where the suite reads them: a published release is
   fetched into the user cache (:mod:`conformance.releases.fetch`), a wheel, tree or
   text given by path is stored there (``--releases DIR``, or
   ``$OUTPUTS_VLLM_RELEASES``, puts them in a folder of texts instead); what the
   project needs of the release (its surface, its revision data, the README's tables)
   is written into the repository, so one commit carries the whole release;
2. finds its nearest known release and what it changed
   (:mod:`conformance.releases.text_revision`) and adds its surface to the shipped
   ``conformance/releases/known_surfaces.json``;
3. writes the new revision's data into ``reference/revisions/releases.py``: with its
   types unchanged, the release joins the newest revision's ``releases``; otherwise a
   ``derive(...)`` over the revision of its nearest release, each changed type's fields
   as the text has them (:func:`type_spec_source`), added to ``RELEASE_REVISIONS``;
   then the README's generated tables;
4. runs the release matrix (``--matrix all``: every release in the folder against its
   revision; ``new``: the new release alone; ``none``);
5. prints what a person still has to review: the summary line, every change the data
   cannot say (a method added, a signature or a body changed, a producer changed),
   and each failure of the matrix.

``--root`` is the checkout written to (default: the one this module is in).  Exit 0
when the data is written and the matrix passes, 1 when the matrix fails, 4 for bad
input (nothing written).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from conformance.cli.main import USAGE_ERROR
from conformance.oracle.revisions import (
    SpecRevision,
    all_revisions,
    known_releases,
    names_a_path,
    revision,
)
from conformance.oracle.text_surface import OUTPUTS_MODULE
from conformance.releases.fetch import (
    cache_folder,
    every_release,
    fetch_all,
    is_fetched,
    release_outputs,
    store,
    texts_folder,
)
from conformance.releases.sources import VllmSource, read_source
from conformance.releases.text_revision import (
    TextRevision,
    changes_count,
    of_source,
    spec_type_of,
)
from conformance.releases.texts import MRV2_FOLDER, PRODUCERS_FOLDER, ReleaseTextError

ROOT = Path(__file__).resolve().parents[2]
RELEASES_ENV = "OUTPUTS_VLLM_RELEASES"
#: Changes the revision data states; every other change is for a person to review.
_DATA_CHANGES = ("field added", "field removed", "field retyped", "field re-defaulted",
                 "type added", "type removed", "fields reordered")  # fmt: skip


class AddReleaseError(ValueError):
    """Bad input: the message names it and the fix (exit 4, nothing written)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.cli.add_release",
        description="Add a vLLM release: its texts, its revision data, the release matrix.",
    )
    parser.add_argument("release", help="a release (0.34.0), or a wheel, tree or outputs.py")
    parser.add_argument("--version", help="the release a path holds (default: from its name)")
    parser.add_argument("--releases", type=Path, help="the folder of release texts")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to write to")
    parser.add_argument("--matrix", choices=("all", "new", "none"), default="all")
    parser.add_argument("--report-dir", type=Path, help="the matrix's reports (default: temp)")
    args = parser.parse_args(argv)
    try:
        source, version = _source(args.release, args.version)
        releases = args.releases or texts_folder()
        judged = of_source(source)
        plan = _plan(judged, version, args.root)
        _refuse_other_texts(source, version, releases)
    except (AddReleaseError, ReleaseTextError) as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return USAGE_ERROR
    written = _write_texts(source, version, releases)
    _write_known_surface(judged, version, args.root)
    _write_data(plan, args.root)
    _regenerate_readme(args.root)
    print(f"vLLM {version} = nearest known {judged.nearest} + {changes_count(judged.changes)}")
    for change in judged.changes:
        print(f"  {change.describe()}: {change.known or '-'} -> {change.new or '-'}")
    print(f"texts: {', '.join(str(p) for p in written)}")
    print(f"data: {plan.describe()} in {args.root / 'reference' / 'revisions' / 'releases.py'}")
    failures = _matrix(args, releases, version)
    review = _review(judged, plan, failures)
    print("to review:")
    for item in review:
        print(f"  - {item}")
    return 1 if failures else 0


# --- the release's texts ----------------------------------------------------------------


def _source(release: str, version: str | None) -> tuple[VllmSource, str]:
    if names_a_path(release):
        source = read_source(release)
        version = version or source.version
        if version is None:
            raise AddReleaseError(
                f"{release}: no release version in its name; give --version X (e.g. 0.34.0)"
            )
    else:
        version = _release_number(release)
        source = read_source(release_outputs(version))
    version = _release_number(version)
    if version in known_releases():
        raise AddReleaseError(
            f"vLLM {version} is known already (python -m conformance --list-revisions)"
        )
    if Version(version) < Version(known_releases()[-1]):
        raise AddReleaseError(
            f"vLLM {version} is older than the newest known release ({known_releases()[-1]}); "
            "releases are added in order"
        )
    return source, version


def _release_number(text: str) -> str:
    try:
        parsed = Version(text.strip().removeprefix("v"))
    except InvalidVersion:
        raise AddReleaseError(f"{text!r} is not a release version such as 0.34.0") from None
    if parsed.is_prerelease or parsed.is_devrelease or parsed.local or parsed.is_postrelease:
        raise AddReleaseError(
            f"{text} is not a release (a dev, pre, post or local build); judge it with "
            f"python -m conformance --revision PATH instead"
        )
    return ".".join(map(str, (*parsed.release, 0, 0)[: max(3, len(parsed.release))]))


def _texts(source: VllmSource, version: str, folder: Path) -> dict[Path, str]:
    wanted = {folder / f"outputs-{version}.py.txt": source.outputs}
    if source.producers is not None:
        wanted[folder / PRODUCERS_FOLDER / f"producers-{version}.py.txt"] = source.producers
    return wanted


def _refuse_other_texts(source: VllmSource, version: str, folder: Path) -> None:
    """A release text already in the folder with another content is never overwritten;
    a folder that cannot be written is refused before anything is."""
    if folder == cache_folder() and is_fetched(version, folder):
        return  # the cache holds the release already: nothing is written there
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise AddReleaseError(
            f"cannot write the release texts into {folder} ({existing} is not writable); "
            f"give --releases DIR (or set ${RELEASES_ENV})"
        )
    for path, text in _texts(source, version, folder).items():
        if path.exists() and path.read_text(encoding="utf-8") != text:
            raise AddReleaseError(f"{path} exists with another text; remove it first")


def _write_texts(source: VllmSource, version: str, folder: Path) -> list[Path]:
    wanted = _texts(source, version, folder)
    if folder == cache_folder():
        if not is_fetched(version, folder):
            files = {str(p.relative_to(folder)): t for p, t in wanted.items()}
            store(folder, version, files, {"source": str(source.path)})
        return list(wanted)
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(text, encoding="utf-8")
    return list(wanted)


def _write_known_surface(judged: TextRevision, version: str, root: Path) -> None:
    from conformance.releases import known_surfaces

    path = root / "conformance" / "releases" / "known_surfaces.json"
    surfaces = dict(known_surfaces.known_surfaces(path))
    surfaces[version] = judged.surface
    known_surfaces.write(surfaces, path)


# --- the revision data ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Plan:
    """What goes into releases.py: the release joins a revision, or a new one is derived."""

    version: str
    joins: str | None  #: the revision whose ``releases`` it joins
    base: str  #: the revision it is derived from
    types: tuple[str, ...]  #: the changed types' TypeSpec sources
    drop_types: tuple[str, ...]
    notes: tuple[str, ...]  #: what the data cannot say, for review
    #: members whose body changed: judged against vLLM's own code of the release
    judged_by_vllm: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.joins is not None:
            return f"{self.version} joins the releases of revision {self.joins}"
        return f"R_{_ident(self.version)} = derive(R_{_ident(self.base)}, ...) added"


def _ident(version: str) -> str:
    return version.replace(".", "_")


def _plan(judged: TextRevision, version: str, root: Path) -> Plan:
    base = revision(judged.base)
    newest = all_revisions()[-1]
    data_changes = [
        c for c in judged.changes if c.module == OUTPUTS_MODULE and c.change in _DATA_CHANGES
    ]
    notes = []
    bodies = body_changes(judged, base)
    if not data_changes and not bodies and base.name == newest.name:
        return Plan(version, base.name, base.name, (), (), ())
    module = judged.oracle_module()
    changed_types = list(dict.fromkeys(c.type for c in data_changes if c.change != "type removed"))
    sources = []
    for name in changed_types:
        spec_type = spec_type_of(name, judged.surface, base)
        if spec_type is None:
            notes.append(f"{name}: a class no spec type holds; left out of the data")
            continue
        made, why = type_spec_source(getattr(module, name), base, spec_type, judged.surface)
        sources.append(made)
        notes += why
    dropped = tuple(
        c.type for c in data_changes if c.change == "type removed" and c.type in base.types
    )
    judged_by_vllm = tuple(dict.fromkeys([*base.judged_by_vllm, *bodies]))
    return Plan(version, None, base.name, tuple(sources), dropped, tuple(notes), judged_by_vllm)


def body_changes(judged: TextRevision, base: SpecRevision) -> list[str]:
    """``Type.member`` of each spec type's method whose body the release changed: no data
    says what it now does, so vLLM's own code of the release judges it."""
    return [
        c.where
        for c in judged.changes
        if c.module == OUTPUTS_MODULE
        and c.change == "body changed"
        and c.member
        and spec_type_of(c.type, judged.surface, base) is not None
    ]


def type_spec_source(
    cls: type, base: SpecRevision, spec_type: str, surface: Any
) -> tuple[str, list[str]]:
    """``TypeSpec(...)`` of a text's class, as Python source for releases.py: its kind and
    fields as the text has them; its methods as the base revision lists them (a method's
    rule needs a behaviour and the reference's implementation: the notes say which)."""
    notes: list[str] = []
    known = base.types.get(cls.__name__)
    if dataclasses.is_dataclass(cls):
        kind = "dataclass"
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        kind = "namedtuple"
    else:
        kind = "abc"
    fields = [_field_source(cls, name, surface) for name in _field_names(cls, kind)]
    methods = ""
    held_spec = f"R_{_ident(base.name)}.types[{cls.__name__!r}]"
    if known is not None and known.methods:
        gone = [m.name for m in known.methods if not hasattr(cls, m.name)]
        methods = (
            f"methods=without({held_spec}.methods, {', '.join(map(repr, gone))}),\n            "
            if gone
            else f"methods={held_spec}.methods,\n            "
        )
    extra = sorted(
        n
        for n, v in vars(cls).items()
        if callable(v) or isinstance(v, (staticmethod, classmethod, property))
        if not n.startswith("__") and (known is None or known.method_named(n) is None)
    )
    if extra:
        notes.append(
            f"{cls.__name__}: method(s) {', '.join(extra)} not in the data: a method needs a "
            "behaviour (reference/revisions/behaviours.py), the reference's implementation "
            "(methods.py) and a check"
        )
    flags = ""
    if kind == "dataclass":
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        found = {k: getattr(params, k) for k in ("init", "repr", "eq", "order", "frozen")}
        flags = f"dataclass_flags={found!r},\n            "
    held = f"held_by={spec_type!r},\n            " if spec_type != cls.__name__ else ""
    counted = ""
    if hasattr(cls, "is_empty") and kind == "dataclass":
        counted_fields = _counted_by_is_empty(cls)
        counted = f"counted_by_is_empty={tuple(counted_fields)!r},\n            "
        if known is not None and tuple(counted_fields) != known.counted_by_is_empty:
            notes.append(
                f"{cls.__name__}.is_empty: counts {', '.join(counted_fields)} (read from its "
                "body): check it"
            )
    body = "".join(f"            {f},\n" for f in fields)
    source = (
        f"TypeSpec(\n            name={cls.__name__!r},\n            kind={kind!r},\n"
        f"            fields=(\n{body}            ),\n            {methods}{flags}{held}{counted}"
    ).rstrip() + "\n        )"
    return source, notes


def _field_names(cls: type, kind: str) -> list[str]:
    if kind == "dataclass":
        return [f.name for f in dataclasses.fields(cls)]
    if kind == "namedtuple":
        return list(cls._fields)  # type: ignore[attr-defined]
    return []


def _field_source(cls: type, name: str, surface: Any) -> str:
    """``FieldSpec(...)``: the annotation as the text writes it (opaque where it names
    what the text imports for type checkers only), the default as the class has it."""
    from conformance.oracle.annotations import normalise
    from conformance.oracle.differential import annotation_of, default_of, meaningful

    member = surface.get((OUTPUTS_MODULE, cls.__name__, name))
    text = member.shape if member is not None else normalise(annotation_of(cls, name))
    default, factory = default_of(cls, name)
    parts = [repr(name), repr(text)]
    if factory is not None:
        made = factory()
        parts.append(
            f"default_factory={type(made).__name__}"
            if type(made) in (list, dict, set) and not made
            else f"default_factory=lambda: {made!r}"
        )
    elif default is not _missing():
        parts.append(f"default={default!r}")
    if not meaningful(text, cls, name):
        parts.append("annotation_meaningful=False")
    return f"FieldSpec({', '.join(parts)})"


def _missing() -> Any:
    from conformance.oracle.differential import _MISSING

    return _MISSING


def _counted_by_is_empty(cls: type) -> list[str]:
    """The fields ``is_empty`` reads (``self.<field>``), in field order."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls.is_empty)))  # type: ignore[attr-defined]
    except (OSError, TypeError, SyntaxError):
        return []
    read = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }
    return [f.name for f in dataclasses.fields(cls) if f.name in read]


_DATA_MARK = "#: Every revision of a release, oldest first."


def _write_data(plan: Plan, root: Path) -> None:
    path = root / "reference" / "revisions" / "releases.py"
    text = path.read_text(encoding="utf-8")
    if plan.joins is not None:
        text = _joined(text, plan.joins, plan.version)
    else:
        variable = f"R_{_ident(plan.version)}"
        types = "".join(f"        {t},\n" for t in plan.types)
        drop = f"    drop_types={list(plan.drop_types)!r},\n" if plan.drop_types else ""
        if plan.judged_by_vllm:
            drop += f"    judged_by_vllm={plan.judged_by_vllm!r},\n"
        block = (
            f"# --- {plan.version}: written by nox -s add-release; review it -------------------\n\n"
            f"{variable} = derive(\n    R_{_ident(plan.base)},\n    {plan.version!r},\n"
            f"    releases=({plan.version!r},),\n"
            f'    summary="TODO: what {plan.version} changed",\n'
            f"    types=[\n{types}    ],\n{drop})\n\n"
        )
        if _DATA_MARK not in text:
            raise SystemExit(f"ERROR: {path} lacks the line {_DATA_MARK!r}")
        text = text.replace(_DATA_MARK, block + _DATA_MARK, 1)
        head, sep, rest = text.partition("RELEASE_REVISIONS: tuple[SpecRevision, ...] = (\n")
        listed, close, tail = rest.partition("\n)\n")
        text = head + sep + listed + f"\n    {variable}," + close + tail
    path.write_text(text, encoding="utf-8")


def _joined(text: str, revision_name: str, version: str) -> str:
    """``releases.py`` with ``version`` added to the ``releases`` of ``revision_name``."""
    variable = f"R_{_ident(revision_name)}"
    start = text.find(f"\n{variable} = ")
    if start < 0:
        raise SystemExit(f"ERROR: releases.py has no {variable}")
    found = re.compile(r"releases=\(([^)]*)\)").search(text, start)
    if found is None:
        raise SystemExit(f"ERROR: {variable} lists no releases=(...)")
    listed = [r.strip().strip("'\"") for r in found[1].split(",") if r.strip()]
    new = "releases=(" + ", ".join(f'"{r}"' for r in [*listed, version]) + ")"
    return text[: found.start()] + new + text[found.end() :]


def _regenerate_readme(root: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "conformance.cli.revision_listing"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, check=True, capture_output=True,
    )  # fmt: skip


# --- the matrix and the review ------------------------------------------------------------


def _matrix(args: argparse.Namespace, releases: Path, version: str) -> list[str]:
    """The release matrix run with the new data; each failing run as one line."""
    if args.matrix == "none":
        return []
    out = args.report_dir or Path(tempfile.mkdtemp(prefix="add-release-matrix-"))
    if args.matrix == "all" and releases == cache_folder():
        fetch_all([v for v in every_release() if v != version], releases)
    if args.matrix != "new":
        return _run_matrix(args, releases, releases, out)
    with tempfile.TemporaryDirectory(prefix="add-release-new-") as new:
        folder = Path(new)
        for name in (
            f"outputs-{version}.py.txt",
            f"{PRODUCERS_FOLDER}/producers-{version}.py.txt",
            f"{MRV2_FOLDER}/producers-mrv2-{version}.py.txt",
        ):
            if (releases / name).is_file():
                (folder / name).parent.mkdir(exist_ok=True)
                (folder / name).write_text(
                    (releases / name).read_text(encoding="utf-8"), encoding="utf-8"
                )
        return _run_matrix(args, releases, folder, out)


def _run_matrix(args: argparse.Namespace, releases: Path, folder: Path, out: Path) -> list[str]:
    """The releases in ``folder`` judged (``--vllm-outputs``); each failing run as one line."""
    environment = {**os.environ, "PYTHONPATH": str(args.root)}
    if releases != cache_folder():
        # A revision judged by vLLM's own code reads the release's text from there.
        environment[RELEASES_ENV] = str(releases)
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "--vllm-outputs", str(folder), "--report-dir",
         str(out), "-p", "no:cacheprovider"],
        cwd=args.root, env=environment,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    print(done.stdout.strip())
    summary = out / "summary.json"
    if not summary.is_file():
        return [
            f"the release matrix wrote no summary (exit {done.returncode}): {done.stderr.strip()[-300:]}"
        ]
    data = json.loads(summary.read_text(encoding="utf-8"))
    return [
        f"vLLM {r['release']} against {r['revision']} ({r['note']}): exit {r['exit_code']}, "
        f"failing {', '.join(r['failing_behaviours']) or '-'} (report {out / r['report']})"
        for r in data["runs"]
        if r["exit_code"] != 0 and r["note"] == "own revision"
    ]


def _review(judged: TextRevision, plan: Plan, failures: list[str]) -> list[str]:
    items = []
    if plan.joins is None:
        items.append(
            f'the summary of R_{_ident(plan.version)} in reference/revisions/releases.py ("TODO")'
        )
    for change in judged.changes:
        if change.module == OUTPUTS_MODULE and change.change in _DATA_CHANGES:
            continue
        if change.where in plan.judged_by_vllm:
            items.append(
                f"{change.describe()}: judged against vLLM's own code of {plan.version} "
                "(judged_by_vllm in its revision); where it is a rule every backend keeps, "
                "name a behaviour, implement it for the reference and check it, then drop "
                "it from judged_by_vllm"
            )
            continue
        items.append(
            f"{change.describe()} ({change.module}): a rule changed? if so, name a behaviour, "
            "implement it for the reference and check it (conformance/README.md, 'Adding the "
            "next vLLM release'); a producer's change may change its AsyncOutputContract"
        )
    items += plan.notes
    items += [f"the release matrix fails: {f}" for f in failures]
    items.append(
        "README.md and conformance/README.md where they name the newest release (the tables "
        "are regenerated); then nox -s tests"
    )
    return items


if __name__ == "__main__":
    sys.exit(main())
