"""What a spec revision demands of a backend.

Start at :mod:`.revisions` (the suite's view of the revision data in
:mod:`reference.revisions`); :mod:`.surface` and :mod:`.annotations` read a live
class's surface, :mod:`.compare` and :mod:`.invariants` hold values to the spec,
:mod:`.strategies` draws the differential checks' examples.
"""
