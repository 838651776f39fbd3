"""What is judged, and how it is found.

Start at :func:`conformance.backends.resolve.load_backend`: a spec string (a module
path, ``module:attribute`` naming a :class:`~conformance.backends.backend.Backend`, an
entry-point name) becomes a ``Backend``; :mod:`.known` holds the two the suite ships
(``reference``, ``vllm``), :mod:`.devices` which device types a backend runs on here.
"""
