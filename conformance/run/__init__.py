"""The pytest run of the checks.

Start at :mod:`.plugin` (registered by the ``pytest11`` entry point when a run asks
for the suite), then :mod:`.session` (the run: backend, revision, check selection,
the terminal summary).  :mod:`.guard` gives every check a verdict whatever happens:
it keeps the :mod:`.check_plan`, with :mod:`.time_limit` (the :mod:`.check_timer`
armed per check) and :mod:`.worker_crashes` (a dead xdist worker's check);
:mod:`.supervisor` outlives a process that dies, finishing the report from the
:mod:`.journal`; :mod:`.xfails` reads the known deviations; :mod:`.nodeids` names
checks as the report does.
"""
