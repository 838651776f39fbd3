"""What pyproject.toml cannot say.

* The optional C extension of reference_speedups, built when the package is installed
  (a wheel, ``pip install .``, ``pip install -e .``); ``optional=True``: where no C
  compiler is found or the build fails, the install goes on without it and the
  reference runs its pure Python paths (``reference_speedups.path()`` says which).
* ``vllm_outputs_suite.pth`` at the top of the wheel (site-packages): the hook that
  names a ``./conformance.py`` which ``python -m conformance`` would run instead of the
  suite (see ``vllm_outputs_suite_guard``).  setuptools ships only packages and
  modules, so the build copies it beside them.
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

PTH = "vllm_outputs_suite.pth"


class BuildPyWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(PTH, os.path.join(self.build_lib, PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]

    def get_source_files(self) -> list[str]:  # the sdist takes it too
        return [*super().get_source_files(), PTH]


setup(
    cmdclass={"build_py": BuildPyWithPth},
    ext_modules=[
        Extension(
            "reference_speedups._speedups",
            ["reference_speedups/_speedups.c"],
            # -O3: the compiler vectorises the rank count's reduction from -O3 on.  No
            # -ffast-math: the compares keep IEEE semantics (NaN, infinities, zeros).
            extra_compile_args=["-O3"],
            optional=True,
        )
    ],
)
