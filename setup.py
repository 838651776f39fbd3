"""The one thing pyproject.toml cannot say: the optional C extension of reference_speedups.

Built when the package is installed (a wheel, ``pip install .``, ``pip install -e .``);
``optional=True``: where no C compiler is found or the build fails, the install goes
on without it and the reference runs its pure Python paths (``reference_speedups.path()``
says which).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "reference_speedups._speedups",
            ["reference_speedups/_speedups.c"],
            # -O3: the compiler vectorises the rank count's reduction from -O3 on.  No
            # -ffast-math: the compares keep IEEE semantics (NaN, infinities, zeros).
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
