"""The report's keys about a judged vLLM text: ``vllm_text`` and ``vllm_changes``.

``vllm_changes`` is a list, empty unless the revision was a vLLM text, tree or wheel:
each change once (``type``, ``member``, ``change``, the ``known`` and ``new`` forms,
the ``module``), the ``behaviour`` that judges it (``vllm-change:...``, or null where a
backend is asked nothing: a type vLLM removed, a module function) and the checks of the
nearest revision it supersedes (those vLLM's own text fails).  ``vllm_text`` says what
was judged: the text, its nearest known release, the revision of that release.
"""

from __future__ import annotations

from typing import Any


def text_keys(run: Any) -> dict[str, Any]:
    """``vllm_text`` and ``vllm_changes`` of a run (a ``ConformanceRun``), and ``bump``
    when it was a ``--bump-to`` run (:mod:`conformance.run.bump`)."""
    bump = getattr(run, "bump_report", None)
    keys = {"bump": bump} if bump is not None else {}
    judged = getattr(run, "text_revision", None)
    if judged is None:
        return {"vllm_text": None, "vllm_changes": [], **keys}
    superseded = getattr(run, "superseded", {}) or {}
    return {
        **keys,
        "vllm_text": {
            "what": judged.what,
            "path": str(judged.source.path),
            "origin": judged.source.origin,
            "version": judged.source.version,
            "nearest_release": judged.nearest,
            "revision": judged.base,
            "changes": len(judged.changes),
            "headline": judged.headline(),
        },
        "vllm_changes": change_entries(judged, superseded),
    }


def change_entries(judged: Any, superseded: dict[str, Any]) -> list[dict[str, Any]]:
    entries = []
    for change in judged.changes:
        behaviour = next((j.behaviour for j in judged.judged if change in j.changes), None)
        entries.append(
            {
                **change.to_json(),
                "behaviour": behaviour,
                "superseded_checks": sorted(
                    key for key, record in superseded.items() if behaviour in record.by
                ),
            }
        )
    return entries
