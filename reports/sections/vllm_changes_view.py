"""What vLLM changed: the text a report judged (its nearest known release, each change and
what judged it) and, for ``--bump-to``, what moving the pin breaks, breaks first."""

from __future__ import annotations

from collections.abc import Sequence

from reports.document import FAIL, PASS, Block, Heading, Paragraph, Section, Table
from reports.sections.formatting import one_line
from reports.vllm_changes_loader import VllmChanges


def vllm_changes_section(found: Sequence[VllmChanges]) -> Section | None:
    """None when no report judged a vLLM text or a bump."""
    if not found:
        return None
    section = Section("vllm-changes", "What vLLM changed")
    for item in found:
        section.blocks += _text_blocks(item) + _bump_blocks(item)
    return section


def _text_blocks(item: VllmChanges) -> list[Block]:
    if item.text is None:
        return []
    blocks: list[Block] = [
        Paragraph(
            f"Backend `{item.backend}` judged against {item.text['headline']}: what the text "
            f"did not change by revision {item.text['revision']}'s rules, what it changed "
            "against vLLM's own code (the `vllm-change:` behaviours)."
        )
    ]
    if item.changes:
        blocks.append(_changes_table(item.changes, with_judging=True))
    return blocks


def _changes_table(changes: Sequence[dict], with_judging: bool) -> Table:
    columns = ["change", "type", "member", "known", "new"]
    if with_judging:
        columns += ["judged by", "checks it supersedes"]
    rows = []
    for c in changes:
        row = [c["change"], f"`{c['type']}`", f"`{c['member']}`" if c["member"] else "-",
               one_line(c.get("known") or "-"), one_line(c.get("new") or "-")]  # fmt: skip
        if with_judging:
            row += [
                f"`{c['behaviour']}`" if c.get("behaviour") else "nothing demanded",
                str(len(c.get("superseded_checks") or [])),
            ]
        rows.append(row)
    return Table.of(columns, rows)


def _bump_blocks(item: VllmChanges) -> list[Block]:
    bump = item.bump
    if bump is None:
        return []
    breaks = int(bump.get("breaks") or 0)
    verdict = FAIL if breaks else PASS
    blocks: list[Block] = [
        Heading(f"Bump of `{item.backend}` from {bump['from']} to {bump['to']}"),
        Paragraph(
            f"{verdict}: moving the pin breaks {breaks} behaviour(s); "
            f"{len(bump.get('vllm_changes') or [])} vLLM change(s) between them."
        ),
    ]
    if bump.get("vllm_changes"):
        blocks.append(_changes_table(bump["vllm_changes"], with_judging=False))
    rows = bump.get("behaviours") or []
    if rows:
        blocks.append(
            Table.of(
                ("verdict", "behaviour", "at the pin", "at the target", "vLLM changes"),
                [
                    (
                        f"{FAIL} breaks" if r["change"] == "breaks" else r["change"],
                        f"`{r['behaviour']}`",
                        r.get("from") or "not judged",
                        r.get("to") or "not judged",
                        one_line("; ".join(r.get("vllm_changes") or [])) or "-",
                    )
                    for r in rows
                ],
                flagged=[r["change"] == "breaks" for r in rows],
            )
        )
    return blocks
