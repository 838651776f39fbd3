"""Hypothesis strategies and settings of the differential checks.

The suite's profile (:data:`PROFILE`) is derandomized (CI verdicts do not change
from run to run), keeps no example database, and uses modest example counts so the
whole suite stays within its time budget; a run that chooses its own profile gets it.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

#: The settings the checks run under unless the run chose a Hypothesis profile itself.
PROFILE = "vllm-outputs-suite"
settings.register_profile(
    PROFILE,
    derandomize=True,
    database=None,
    max_examples=40,
    deadline=None,
    print_blob=False,
    suppress_health_check=list(HealthCheck),
    # One failure a check: its own message names the input and what was expected, where
    # several distinct ones read "Hypothesis found 2 distinct failures".
    report_multiple_bugs=False,
    # No "explain" phase: its coverage notes name files of this machine and add
    # nothing a backend author can act on.
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
)


#: Profiles Hypothesis loads by itself: ``default``, and ``ci`` where ``$CI`` is set.
AUTOMATIC_PROFILES = frozenset({"default", "ci"})


def use_suite_profile(given: str | None = None) -> None:
    """Load :data:`PROFILE` unless the run chose a profile: ``given`` (the run's
    ``--hypothesis-profile``), or one a conftest loaded (``settings.load_profile``).
    The user's settings win, and the ``--hypothesis-*`` options apply either way (the
    checks fix no settings of their own).  A profile Hypothesis picked by itself
    (``default``; ``ci`` on a CI machine) is not a choice: the suite's applies, so a
    verdict does not depend on the machine's environment variables.

    On a chosen profile three settings are still the suite's: no deadline and no health
    checks, which judge how fast the suite draws its examples, not the backend, and one
    failure a check, so that its line names the input."""
    current = getattr(settings, "get_current_profile_name", None)
    name = current() if current is not None else getattr(settings, "_current_profile", "default")
    if name.startswith(PROFILE):
        return
    if given is None and name in AUTOMATIC_PROFILES:
        settings.load_profile(PROFILE)
        return
    derived = f"{PROFILE}-on-{name}"
    settings.register_profile(
        derived,
        parent=settings.get_profile(name),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    settings.load_profile(derived)


# Any valid token id: 0 and small ids are edge cases worth drawing here (the small-int
# cache below 257 matters to the benchmarks' timings, not to these checks' verdicts).
token_ids = st.integers(min_value=0, max_value=2**31 - 1)
# float32-representable logprobs, ties included (a few values drawn often).
logprob_values = st.one_of(
    st.sampled_from([0.0, -0.5, -1.0, -2.0, float("-inf")]),
    st.floats(min_value=-50.0, max_value=0.0, width=32),
)


@st.composite
def cu_vectors(draw: st.DrawFn, num_reqs: int, max_tokens: int = 4) -> list[int]:
    """``[0, c1, ...]``: num_reqs + 1 non-decreasing entries (requests own 0..max rows)."""
    counts = draw(st.lists(st.integers(0, max_tokens), min_size=num_reqs, max_size=num_reqs))
    return [0, *accumulate(counts)]


@st.composite
def logprobs_rows(draw: st.DrawFn, num_rows: int, width: int) -> dict[str, Any]:
    """Field values of a LogprobsLists / LogprobsTensors with ``num_rows`` rows."""
    ids = draw(
        st.lists(
            st.lists(token_ids, min_size=width, max_size=width),
            min_size=num_rows,
            max_size=num_rows,
        )
    )
    logprobs = draw(
        st.lists(
            st.lists(logprob_values, min_size=width, max_size=width),
            min_size=num_rows,
            max_size=num_rows,
        )
    )
    ranks = draw(st.lists(st.integers(1, 2**20), min_size=num_rows, max_size=num_rows))
    return {"logprob_token_ids": ids, "logprobs": logprobs, "ranks": ranks}


@st.composite
def logprobs_lists_cases(draw: st.DrawFn) -> dict[str, Any]:
    """A LogprobsLists's fields, with or without cu, and a request range to slice."""
    num_reqs = draw(st.integers(0, 6))
    with_cu = draw(st.booleans())
    cu = draw(cu_vectors(num_reqs)) if with_cu else None
    num_rows = cu[-1] if cu is not None else num_reqs
    width = draw(st.integers(1, 4))
    rows = draw(logprobs_rows(num_rows, width))
    start = draw(st.integers(0, num_reqs))
    # Mostly ordered ranges; sometimes start > end, which slicing answers with nothing.
    end = draw(st.one_of(st.integers(start, num_reqs), st.integers(0, num_reqs)))
    return {**rows, "cu": cu, "num_reqs": num_reqs, "start": start, "end": end}


@st.composite
def logprobs_tensors_cases(draw: st.DrawFn) -> dict[str, Any]:
    """CPU tensors of a LogprobsTensors (int32 ids, float32 logprobs, int32/int64 ranks)."""
    num_rows = draw(st.integers(0, 8))
    width = draw(st.integers(1, 4))
    rows = draw(logprobs_rows(num_rows, width))
    rank_dtype = draw(st.sampled_from([torch.int32, torch.int64]))
    with_cu = draw(st.booleans())
    return {
        "logprob_token_ids": torch.tensor(rows["logprob_token_ids"], dtype=torch.int32).reshape(
            num_rows, width
        ),
        "logprobs": torch.tensor(rows["logprobs"], dtype=torch.float32).reshape(num_rows, width),
        "selected_token_ranks": torch.tensor(rows["ranks"], dtype=rank_dtype).reshape(num_rows),
        "cu": [0, num_rows] if with_cu else None,
    }


token_id_rows = st.lists(st.lists(token_ids, max_size=5), max_size=6)


@st.composite
def logits_cases(draw: st.DrawFn) -> dict[str, Any]:
    """Log-probabilities [n, vocab] with frequent ties, sampled ids and a top-k size."""
    num_rows = draw(st.integers(1, 5))
    vocab = draw(st.integers(1, 12))
    values = draw(
        st.lists(
            st.lists(
                st.sampled_from([-0.25, -1.0, -1.5, -3.0, -7.0]) | st.floats(-20.0, 0.0, width=32),
                min_size=vocab,
                max_size=vocab,
            ),
            min_size=num_rows,
            max_size=num_rows,
        )
    )
    sampled = draw(st.lists(st.integers(0, vocab - 1), min_size=num_rows, max_size=num_rows))
    k = draw(st.integers(0, vocab))
    return {
        "logprobs": torch.tensor(values, dtype=torch.float32),
        "token_ids": torch.tensor(sampled),
        "k": k,
    }
