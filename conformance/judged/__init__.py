"""What a run judges against, decided in one place.

Any spelling of it (a revision or release name, a path to a vLLM text, tree or wheel,
what a backend declares or the installed vLLM says it is, a bump's target) becomes one
frozen :class:`Judged`: the revision and its rules, the vLLM text judged and its
changes against its nearest release, and the checks that text's own code supersedes.
:func:`judged_at` is the entry point; :mod:`conformance.run.session` asks it for both
sides of a bump as for a plain run.
"""

from conformance.judged.choice import JudgedError, RevisionChoice, choose_revision
from conformance.judged.value import Judged, judged_at

__all__ = ["Judged", "JudgedError", "RevisionChoice", "choose_revision", "judged_at"]
