"""The conformance report: the records of a run and the JSON file made of them.

:mod:`.records` turns pytest's reports into typed records (``TestRecord``,
``Results``); :mod:`.writer` builds and writes the JSON report, whose names
:mod:`.schema` owns (DESIGN.md section 3; ``reports`` reads it with them);
:mod:`.table` prints the spec type x device table.  Whoever ends a run (its normal
end, a hang, a death) hands the records to the writer.  Nothing is imported here, so
the schema can be read without the rest.
"""
