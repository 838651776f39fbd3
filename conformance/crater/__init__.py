"""The crater: every known vLLM plugin's published code judged against any vLLM.

``python -m conformance crater TARGET`` reads each plugin's newest release (or the
plugins named with ``--plugins``) from the package index without installing it
(:mod:`.sources`), finds what it uses of vLLM's output types and producers by what it
is (:mod:`.uses`, over the plugin's modules as one :mod:`.world`; what vLLM's names
are: :mod:`.vllm_names`, :mod:`.output_members`), and judges each use at the plugin's own pin (:mod:`.pins`) and at
the target (:mod:`.verdicts`), with the texts, changes and surfaces the conformance
suite already has (:mod:`conformance.releases`, :mod:`conformance.oracle`).  The
report: :mod:`.report` (``crater-report/1``).
"""
