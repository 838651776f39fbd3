"""The pytest run of the checks.

Start at :mod:`.plugin` (registered by the ``pytest11`` entry point when a run asks
for the suite), then :mod:`.session` (the run: backend, revision, check selection,
the terminal summary).  :mod:`.guard` bounds each check in time and records crashes
and hangs; :mod:`.supervisor` outlives a process that dies; :mod:`.xfails` reads the
known deviations; :mod:`.nodeids` names checks as the report does.
"""
