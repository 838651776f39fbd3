"""The revisions listed: ``python -m conformance --list-revisions``, and the README's tables of them."""

from __future__ import annotations

from collections.abc import Sequence

from conformance.oracle.revisions import DEFAULT_REVISION, all_revisions
from reference.revisions.model import SpecRevision


def listing_lines() -> list[str]:
    revisions = all_revisions()
    width = max(len(r.name) for r in revisions)
    lines = []
    for r in revisions:
        covers = ", ".join(r.releases) if r.releases else "(no release)"
        default = " [default]" if r.name == DEFAULT_REVISION else ""
        lines.append(f"{r.name:<{width}}  {covers}{default}  -- {r.summary}")
    return lines


# --- The README's tables, made from the revision data ------------------------------------
#
# conformance/README.md holds them between markers; a test compares them with these, and
# ``python -m conformance.cli.revision_listing`` rewrites them after the data changed.

README_TABLES = ("release-matrix", "behaviours", "crater kinds")
#: Generated words inside a sentence (``from 0.10.2 to 0.34.0``), between inline markers.
README_PHRASES = ("release-range",)


def release_range() -> str:
    """``0.10.2 to 0.34.0``: the oldest and the newest release the suite judges."""
    from conformance.oracle.revisions import known_releases

    releases = known_releases()
    return f"{releases[0]} to {releases[-1]}"


def release_matrix_markdown() -> str:
    """One row per revision: the releases it judges and what changed at it."""
    lines = [
        "| revision | releases (each judged as `--backend vllm`) | what changed |",
        "|---|---|---|",
    ]
    for r in all_revisions():
        covers = ", ".join(r.releases) if r.releases else "(vLLM's main branch, no release)"
        default = " (default)" if r.name == DEFAULT_REVISION else ""
        lines.append(f"| {r.name}{default} | {covers} | {r.summary} |")
    return "\n".join(lines) + "\n"


def behaviours_markdown() -> str:
    """One row per named behaviour: the revisions that have it and its rule."""
    from reference.revisions.behaviours import BEHAVIOURS, PRODUCER_BEHAVIOURS

    revisions = all_revisions()
    lines = ["| behaviour | revisions | rule |", "|---|---|---|"]
    for name, rule in BEHAVIOURS.items():
        having = [r.name for r in revisions if name in r.behaviours]
        lines.append(f"| `{name}` | {_spans(having, revisions)} | {rule} |")
    for name, rule in PRODUCER_BEHAVIOURS.items():
        having = [r.name for r in revisions if name in r.producer_behaviours]
        spans = _spans(having, revisions)
        lines.append(
            f"| `{name}` | {spans + ' (when declared)' if spans == 'all' else spans} | {rule} |"
        )
    return "\n".join(lines) + "\n"


def crater_kinds_markdown() -> str:
    """One row per kind of break the crater reports (its schema says what each means)."""
    from conformance.crater.schema import KINDS

    lines = ["| `kind` | what broke |", "|---|---|"]
    lines += [f"| `{kind}` | {meaning} |" for kind, meaning in KINDS.items()]
    return "\n".join(lines) + "\n"


_EN_DASH = " \u2013 "


def _spans(names: list[str], revisions: Sequence[SpecRevision]) -> str:
    """``all``, or runs of consecutive revisions joined by an en dash (the README's form)."""
    order = [r.name for r in revisions]
    if names == order:
        return "all"
    runs: list[list[str]] = []
    for name in names:
        if runs and order.index(name) == order.index(runs[-1][-1]) + 1:
            runs[-1].append(name)
        else:
            runs.append([name])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}{_EN_DASH}{run[-1]}" for run in runs)


def readme_with_tables(text: str) -> str:
    """``text`` (conformance/README.md) with each generated table replaced by today's."""
    made = {
        "release-matrix": release_matrix_markdown(),
        "behaviours": behaviours_markdown(),
        "crater kinds": crater_kinds_markdown(),
    }
    for key in README_TABLES:
        start, end = f"<!-- {key}: generated -->\n", f"<!-- /{key} -->"
        before, found, rest = text.partition(start)
        if not found or end not in rest:
            raise ValueError(f"conformance/README.md lacks the markers {start.strip()} ... {end}")
        text = before + start + made[key] + end + rest.partition(end)[2]
    for key in README_PHRASES:
        text = _with_phrases(text, key, release_range())
    return text


def _with_phrases(text: str, key: str, phrase: str) -> str:
    """Every ``<!-- key -->...<!-- /key -->`` of ``text`` holding ``phrase``."""
    start, end = f"<!-- {key} -->", f"<!-- /{key} -->"
    if start not in text:
        raise ValueError(f"conformance/README.md lacks the marker {start}")
    parts = text.split(start)
    for index in range(1, len(parts)):
        if end not in parts[index]:
            raise ValueError(f"conformance/README.md: a {start} without its {end}")
        parts[index] = phrase + end + parts[index].partition(end)[2]
    return start.join(parts)


if __name__ == "__main__":
    from pathlib import Path

    readme = Path(__file__).resolve().parents[1] / "README.md"
    readme.write_text(readme_with_tables(readme.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"tables regenerated in {readme}")
