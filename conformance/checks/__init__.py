"""The conformance checks, one module per spec type and per spec method.

``test_<type>.py`` holds a type's surface and construction checks,
``test_<type>_<method>.py`` the behaviour of one method (e.g.
``test_logprobs_lists_slice.py``), ``test_producer_<op>.py`` the checks of a
backend's own producers.  They run through ``pytest --pyargs conformance``.
"""
