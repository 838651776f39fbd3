"""The report's sections, one module each, in the order the report shows them.

:mod:`reports.content` puts them together: :mod:`.header`, :mod:`.verdict`,
:mod:`.target_tables`, :mod:`.release_view`, :mod:`.throughput`,
:mod:`.conformance_view`, :mod:`.changes`, :mod:`.measurements`, :mod:`.problems`;
:mod:`.formatting` is how numbers read in all of them, :mod:`.inputs` what they read.
"""
