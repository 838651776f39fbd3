"""asv benchmarks of the output types (see ``benchmarks/common.py`` for the shared rules).

asv imports this folder as a package; it is not installed with the project.
"""
