"""A backend's producers: the step its async output is built from, and where it runs.

Start at :mod:`.step` (:class:`~conformance.producers.step.Step`, what vLLM's runner
holds when it builds its async output); :mod:`.runtime` says on which device a
producer is judged, simulating an absent accelerator with :mod:`.simulated_device`;
:mod:`.warm_up` calls each declared producer once before the checks.
"""
