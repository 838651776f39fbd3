"""A plugin's code had as text: a checkout, a wheel, an sdist, a release on an index."""

from __future__ import annotations

from pathlib import Path

import archives
import fixture_plugins as plugins
import pytest
from vllm_release_texts import MISSING, RELEASES

from conformance.crater.pins import pin_of
from conformance.crater.sources import PluginSourceError, plugin_source
from conformance.crater.uses import read_plugin


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A cache of its own, and an index with nothing on it unless a test serves some."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "index").mkdir()
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "index").as_uri())
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    return tmp_path


def _code(files: dict[str, str]) -> dict[str, str]:
    return {p: t for p, t in files.items() if p.endswith(".py")}


#: When the index says vLLM's newest releases came out.
_RELEASED = {"0.30.0": "2026-09-22T05:23:10Z", "0.31.0": "2026-10-05T07:47:02Z",
             "0.32.0": "2026-10-18T10:03:29Z", "0.33.0": "2026-11-02T10:13:42Z",
             "0.34.0": "2026-11-16T23:51:51Z"}  # fmt: skip


def _vllm_released(folder: Path) -> list[tuple[Path, str]]:
    """vLLM's newest releases as an index lists them: ``(wheel, upload time)``."""
    return [(folder / f"vllm-{v}-py3-none-any.whl", day) for v, day in _RELEASED.items()]


def _runner(package: str, first_import: str, statement: str) -> dict[str, str]:
    """A plugin of one runner module: an import, then ``step(ids)`` doing ``statement``."""
    code = f"{first_import}\nfrom vllm.v1.outputs import ModelRunnerOutput\n\n\n"
    return {
        f"{package}/__init__.py": "",
        f"{package}/runner.py": f"{code}def step(ids):\n    {statement}\n",
    }


def test_a_checkout_is_read_with_its_declared_name_version_and_pin(tmp_path) -> None:
    source = plugin_source(str(plugins.write(plugins.BUILDS_OUTPUT, tmp_path)))
    assert (source.name, source.version) == ("npu-builder", "1.0")
    assert set(source.files) == set(_code(plugins.BUILDS_OUTPUT))
    pin = pin_of(source, read_plugin(source.files), None)
    assert pin.release == "0.33.0"  # vllm==0.33.0+npu: a local build of 0.33.0


def test_a_package_folder_given_for_its_project_is_read_as_that_project(tmp_path) -> None:
    # A plugin author's slip: the package, not the folder declaring it.  Its pin and
    # its imports of its own package are the project's.
    root = plugins.write(plugins.BUILDS_OUTPUT, tmp_path / "project")
    [package] = {Path(p).parts[0] for p in plugins.BUILDS_OUTPUT if p.endswith(".py")}
    source = plugin_source(str(root / package))
    assert (source.name, source.version) == ("npu-builder", "1.0")
    assert set(source.files) == set(_code(plugins.BUILDS_OUTPUT))
    # A folder of a project of its own, or no project above it, is read as given.
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "__init__.py").write_text("")
    (tmp_path / "loose" / "runner.py").write_text("x = 1\n")
    assert plugin_source(str(tmp_path / "loose")).files.keys() == {"__init__.py", "runner.py"}


def test_an_unpacked_sdist_says_its_name_version_and_requirement(tmp_path) -> None:
    files = {
        "pyproject.toml": '[project]\nname = "npu-dyn"\ndynamic = ["version"]\n',
        "PKG-INFO": "Metadata-Version: 2.1\nName: npu-dyn\nVersion: 1.10.0\n"
        "Requires-Dist: vllm==0.33.0\n",
        "npu_dyn/__init__.py": "",
    }
    source = plugin_source(str(plugins.write(files, tmp_path)))
    assert (source.name, source.version, source.requires) == (
        "npu-dyn",
        "1.10.0",
        ("vllm==0.33.0",),
    )


@pytest.mark.parametrize(
    "declared",
    [
        {"setup.py": 'from setuptools import setup\n\nREQUIRES = ["torch", "vllm==0.14.0"]\n'
                     'setup(name="npu-old", version="2.0", install_requires=REQUIRES)\n'},
        {"setup.cfg": "[metadata]\nname = npu-old\nversion = 2.0\n\n[options]\n"
                      "install_requires =\n    torch\n    vllm==0.14.0\n"},
    ],
    ids=["setup.py", "setup.cfg"],
)  # fmt: skip
def test_a_checkout_declaring_itself_in_setup_py_or_setup_cfg_is_pinned(tmp_path, declared):
    files = {**declared, "npu_old/__init__.py": "from vllm.v1.outputs import ModelRunnerOutput\n"}
    source = plugin_source(str(plugins.write(files, tmp_path)))
    assert (source.name, source.version) == ("npu-old", "2.0")
    assert "vllm==0.14.0" in source.requires


@pytest.mark.parametrize(
    "declared",
    [
        {"pyproject.toml": '[project]\nname = "npu-extra"\nversion = "1.0"\n'
                           'dependencies = ["torch"]\n[project.optional-dependencies]\n'
                           'vllm = ["vllm==0.12.0; python_version >= \'3.10\'"]\n'},
        {"setup.cfg": "[metadata]\nname = npu-extra\nversion = 1.0\n\n[options]\n"
                      "install_requires =\n    torch\n\n[options.extras_require]\n"
                      "vllm =\n    vllm==0.12.0\n"},
        {"setup.py": 'from setuptools import setup\n\nsetup(name="npu-extra", version="1.0", '
                     'install_requires=["torch"], extras_require={"vllm": ["vllm==0.12.0"]})\n'},
    ],
    ids=["pyproject.toml", "setup.cfg", "setup.py"],
)  # fmt: skip
def test_a_checkout_requiring_vllm_under_an_extra_is_pinned_by_it(tmp_path, declared) -> None:
    # A plugin that leaves installing vLLM to its user still says which it runs on, as
    # its wheel's metadata would (Requires-Dist: vllm==0.12.0; extra == "vllm").
    files = {**declared, "npu_extra/__init__.py": "from vllm.v1.outputs import ModelRunnerOutput\n"}
    source = plugin_source(str(plugins.write(files, tmp_path)))
    requirement = source.vllm_requirement()
    assert requirement is not None and str(requirement.specifier) == "==0.12.0"
    assert 'extra == "vllm"' in str(requirement.marker)
    assert pin_of(source, read_plugin(source.files), None).release == "0.12.0"


def test_a_wheel_and_an_sdist_are_read_without_tests(isolated) -> None:
    files = {**_code(plugins.ASYNC_OUTPUTS), "tests/test_it.py": "import vllm\n"}
    wheel = archives.wheel(isolated, "npu-async", "2.0", files, ["vllm>=0.31,<0.33"])
    source = plugin_source(str(wheel))
    assert (source.name, source.version) == ("npu-async", "2.0")
    assert source.skipped == ("tests/test_it.py",)  # named where the run says it is not read
    assert pin_of(source, read_plugin(source.files), None).release == "0.32.0"
    packed = archives.sdist(isolated, "npu-async", "2.0", files)
    assert set(plugin_source(str(packed)).files) == set(_code(plugins.ASYNC_OUTPUTS))


def test_a_release_is_fetched_from_the_index_once_and_kept_with_its_hashes(
    isolated, capsys
) -> None:
    older = archives.wheel(isolated, "npu-async", "1.0", {"npu_async/__init__.py": ""}, [])
    newer = archives.sdist(isolated, "npu-async", "2.0", _code(plugins.ASYNC_OUTPUTS))
    archives.index(isolated / "index", {"npu-async": [older, newer]})
    source = plugin_source("npu-async")
    assert source.version == "2.0"
    assert "npu_async/outputs.py" in source.files
    assert "npu-async 2.0:" in capsys.readouterr().err
    # A second run reads nothing: the archives may go.
    older.unlink()
    newer.unlink()
    again = plugin_source("npu-async==2.0")
    assert again.files == source.files
    assert plugin_source("npu-async").version == "2.0"  # the listing is kept a day
    # Another spelling of the same version is the same release: one row, as released.
    assert plugin_source("npu-async==2.0.0").version == "2.0"


def test_a_version_spelt_otherwise_names_the_release_as_the_index_spells_it(isolated) -> None:
    packed = archives.sdist(isolated, "npu-async", "0.8.0", _code(plugins.ASYNC_OUTPUTS))
    archives.index(isolated / "index", {"npu-async": [packed]})
    assert plugin_source("npu-async==0.8").version == "0.8.0"
    assert plugin_source("npu-async==0.8.0").version == "0.8.0"


def test_a_file_that_does_not_match_the_indexs_hash_is_refused(isolated) -> None:
    packed = archives.sdist(isolated, "npu-async", "2.0", _code(plugins.ASYNC_OUTPUTS))
    archives.index(isolated / "index", {"npu-async": [packed]}, corrupt=True)
    with pytest.raises(PluginSourceError, match="does not match the index's sha256"):
        plugin_source("npu-async")


def test_what_names_no_plugin_is_one_line(isolated) -> None:
    with pytest.raises(
        PluginSourceError, match=r"no such distribution on the package index; check the name "
    ):
        plugin_source("no-such-plugin-anywhere")
    with pytest.raises(PluginSourceError, match=r"index \(did you mean 'vllm-ascend'\?\)$"):
        plugin_source("vllm_Ascnd")  # a known plugin's name, misspelt
    with pytest.raises(PluginSourceError, match="no such file or folder"):
        plugin_source(str(isolated / "missing.whl"))
    with pytest.raises(PluginSourceError, match="not a plugin"):
        plugin_source("not a name!")


@pytest.mark.parametrize(
    ("published", "pin", "why"),
    [
        # vLLM 0.34.0 came later: the plugin was built against 0.33.0.
        ("2026-11-10T09:00:00Z", "0.33.0", "the newest such release on 2026-11-10"),
        ("2026-11-20T09:00:00.123456Z", "0.34.0", "metadata: vllm>=0.30"),
        ("2026-10-01T09:00:00Z", "0.30.0", "the newest such release on 2026-10-01"),
        # Older than every release it allows that the suite knows: not today's newest.
        ("2026-09-01T09:00:00Z", None, "but no such release the suite knows was out"),
    ],
)
def test_an_open_requirement_pins_the_newest_vllm_out_when_the_plugin_was(
    isolated, monkeypatch, published, pin, why
) -> None:
    plugin = archives.wheel(
        isolated, "npu-open", "1.0", _code(plugins.BUILDS_OUTPUT), ["vllm>=0.30"]
    )
    vllm = _vllm_released(isolated)
    with archives.json_index({"npu-open": [(plugin, published)], "vllm": vllm}) as root:
        monkeypatch.setenv("PIP_INDEX_URL", root)
        source = plugin_source("npu-open")
        found = pin_of(source, read_plugin(source.files), None)
    assert found.release == pin
    assert why in found.why
    assert ("when npu-open 1.0 was published" in found.why) == (pin != "0.34.0")


def test_without_dates_an_open_requirement_pins_the_newest_release(isolated) -> None:
    wheel = archives.wheel(
        isolated, "npu-open", "1.0", _code(plugins.BUILDS_OUTPUT), ["vllm>=0.30"]
    )
    source = plugin_source(str(wheel))  # a file the index does not have: undated
    assert source.published is None
    assert pin_of(source, read_plugin(source.files), None).release == "0.34.0"


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_undated_an_open_requirement_pins_where_the_code_imports(isolated, monkeypatch) -> None:
    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    files = _runner(
        "npu_first",
        "from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput",
        "return ModelRunnerOutput(req_ids=ids, req_id_to_index={})",
    )
    wheel = archives.wheel(isolated, "npu-first", "1.0", files, ["vllm>=0.30"])
    source = plugin_source(str(wheel))
    pin = pin_of(source, read_plugin(source.files), None)
    # 0.34.0, the newest it allows, has no first runner: its code was written for 0.33.0.
    assert pin.release == "0.33.0"
    assert pin.why.startswith("metadata: vllm>=0.30, undated; its code imports")


def test_a_release_given_as_a_file_is_dated_as_the_index_dates_it(isolated, monkeypatch) -> None:
    plugin = archives.wheel(
        isolated, "npu-open", "1.0", _code(plugins.BUILDS_OUTPUT), ["vllm>=0.30"]
    )
    vllm = _vllm_released(isolated)
    listed = {"npu-open": [(plugin, "2026-10-01T09:00:00Z")], "vllm": vllm}
    with archives.json_index(listed) as root:
        monkeypatch.setenv("PIP_INDEX_URL", root)
        source = plugin_source(str(plugin))  # the file, not the name
        pin = pin_of(source, read_plugin(source.files), None)
    assert pin.release == "0.30.0"
    assert "when npu-open 1.0 was published" in pin.why


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_a_plugin_published_before_every_known_release_is_unpinned(isolated, monkeypatch) -> None:
    from reference.revisions import known_releases

    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    files = _runner(
        "npu_old",
        "from vllm.v1.sample.sampler import Sampler",
        "return ModelRunnerOutput(req_ids=ids, req_id_to_index={}, spec_token_ids=ids)",
    )
    plugin = archives.wheel(isolated, "npu-old", "0.9.1", files, [])
    vllm = [(isolated / f"vllm-{v}-py3-none-any.whl", "2025-10-01T00:00:00Z")
            for v in known_releases()]  # fmt: skip
    listed = {"npu-old": [(plugin, "2025-09-03T09:00:00Z")], "vllm": vllm}
    with archives.json_index(listed) as root:
        monkeypatch.setenv("PIP_INDEX_URL", root)
        source = plugin_source("npu-old")
        pin = pin_of(source, read_plugin(source.files), None)
    assert pin.release is None
    assert "no release the suite knows was out on 2025-09-03" in pin.why


def test_a_page_that_is_no_index_is_one_line(isolated, monkeypatch) -> None:
    # A captive portal's or proxy's answer where the index's should be.
    pages = {"/simple/npu-portal/": b"{ not an index",
             "/simple/npu-login/": b'{"message": "Authentication required"}'}  # fmt: skip
    with archives.json_index({}, pages) as root:
        monkeypatch.setenv("PIP_INDEX_URL", root)
        for name in ("npu-portal", "npu-login"):
            with pytest.raises(PluginSourceError, match="not a package index's page"):
                plugin_source(name)
        wheel = archives.wheel(isolated, "npu-portal", "1.0", {"npu_portal/__init__.py": ""}, [])
        assert plugin_source(str(wheel)).published is None  # undated, not a traceback


def test_a_damaged_wheel_given_is_bad_input(isolated) -> None:
    wheel = archives.wheel(isolated, "npu-open", "1.0", _code(plugins.BUILDS_OUTPUT), [])
    data = bytearray(wheel.read_bytes())
    start = data.index(b"PK\x03\x04") + 60  # inside the first member's compressed bytes
    data[start : start + 40] = bytes(40)
    wheel.write_bytes(bytes(data))
    with pytest.raises(PluginSourceError, match="download it again") as raised:
        plugin_source(str(wheel))
    assert raised.value.bad_input
    wheel.write_bytes(bytes(data[:100]))
    with pytest.raises(PluginSourceError, match="not a wheel") as raised:
        plugin_source(str(wheel))
    assert raised.value.bad_input


def test_a_requirement_on_vllm_under_an_extra_still_pins(isolated) -> None:
    wheel = archives.wheel(
        isolated, "npu-extra", "1.0", _code(plugins.BUILDS_OUTPUT),
        ["numpy", 'vllm<0.33,>=0.31; extra == "vllm"'],
    )  # fmt: skip
    source = plugin_source(str(wheel))
    pin = pin_of(source, read_plugin(source.files), None)
    assert (pin.release, pin.why) == ("0.32.0", 'metadata: vllm<0.33,>=0.31; extra == "vllm"')


KUNLUN_LIKE = {
    "pyproject.toml": '[project]\nname = "xpu-same"\nversion = "0.11.1"\n',
    "xpu_same/__init__.py": "",
    # A legacy file no release the runner's pin has can import: dead code, not judged.
    "xpu_same/legacy.py": "from vllm.model_executor.sampling_metadata import SamplingMetadata\n"
    "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
    "def f(out: ModelRunnerOutput):\n    return out.not_in_0_11_0\n",
    "xpu_same/runner.py": "from vllm.v1.worker.ubatch_splitting import ubatch_split\n"
    "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
    "def step(req_ids):\n    return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={})\n",
}


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_a_pin_not_declared_moves_to_the_release_its_code_imports_from(tmp_path) -> None:
    from conformance.crater.known import SAME_VERSION

    source = plugin_source(str(plugins.write(KUNLUN_LIKE, tmp_path)))
    pin = pin_of(source, read_plugin(source.files), SAME_VERSION)
    # Its own version is 0.11.1, which lacks vllm.v1.worker.ubatch_splitting; 0.11.0 has it.
    assert pin.release == "0.11.0"
    assert "but 0.11.1 lacks vllm.v1.worker.ubatch_splitting" in pin.why


_CHECKS_ITS_RANGE = (
    "import vllm\n"
    "from packaging.specifiers import SpecifierSet\n"
    "from vllm.v1.outputs import ModelRunnerOutput\n\n"
    "TORCH_RANGE = '>=2.5'\n"
    "SUPPORTED = '{range}'\n\n"
    "def register():\n"
    "    if vllm.__version__ not in SpecifierSet(SUPPORTED):\n"
    "        return None\n"
    "    return 'cpu_plugin.platform.Platform'\n"
)


@pytest.mark.parametrize(
    ("requires", "stated", "expected"),
    [
        ("", ">=0.25.0,<=0.28.0", "0.28.0"),  # pace-vllm 1.3.0: no requirement on vllm
        ('dependencies = ["vllm"]\n', ">=0.25.0,<0.27", "0.26.0"),  # a requirement on any
        ('dependencies = ["vllm==0.30.0"]\n', ">=0.25.0,<=0.28.0", "0.30.0"),  # it says which
    ],
)
def test_a_range_its_code_checks_vllm_against_pins_it(tmp_path, requires, stated, expected):
    files = {
        "pyproject.toml": f'[project]\nname = "cpu-plugin"\nversion = "1.3"\n{requires}',
        "cpu_plugin/__init__.py": _CHECKS_ITS_RANGE.format(range=stated),
    }
    source = plugin_source(str(plugins.write(files, tmp_path)))
    pin = pin_of(source, read_plugin(source.files), None)
    assert pin.release == expected
    if "==" not in requires:
        assert pin.why == f"its code checks vLLM against '{stated}' (cpu_plugin/__init__.py:6)"


def test_a_range_no_known_release_fits_or_two_ranges_pin_nothing(tmp_path) -> None:
    for stated in ("<0.5", ">=0.25.0,<=0.28.0' if True else '>=0.30.0"):
        files = {
            "pyproject.toml": '[project]\nname = "cpu-plugin"\nversion = "1.3"\n',
            "cpu_plugin/__init__.py": _CHECKS_ITS_RANGE.format(range=stated),
        }
        source = plugin_source(str(plugins.write(files, tmp_path / str(len(stated)))))
        assert "its code checks" not in pin_of(source, read_plugin(source.files), None).why


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_a_plugin_naming_no_vllm_is_pinned_where_its_code_imports(tmp_path) -> None:
    files = {**KUNLUN_LIKE, "pyproject.toml": '[project]\nname = "xpu-free"\nversion = "3.0"\n'}
    source = plugin_source(str(plugins.write(files, tmp_path)))
    pin = pin_of(source, read_plugin(source.files), None)
    # Only 0.11.0 has vllm.v1.worker.ubatch_splitting; the newest release lacks it.
    assert pin.release == "0.11.0"
    assert "0.11.0 is the newest release it imports most of its files at" in pin.why
    # Code that imports at the newest release says nothing of which it was written for.
    free = plugin_source(str(plugins.write(plugins.USES_NONE, tmp_path / "none")))
    assert pin_of(free, read_plugin(free.files), None).release is None


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_a_producer_module_gone_at_the_newest_release_pins_a_plugin_naming_no_vllm(
    tmp_path,
) -> None:
    files = {
        "pyproject.toml": '[project]\nname = "spec-free"\nversion = "1.0"\n',
        "spec_free/__init__.py": "",
        "spec_free/rejection.py": "from vllm.v1.sample.rejection_sampler import RejectionSampler\n"
        "from vllm.v1.outputs import SamplerOutput\n\n\n"
        "def step(ids):\n    return SamplerOutput(sampled_token_ids=ids, logprobs_tensors=None)\n",
    }
    source = plugin_source(str(plugins.write(files, tmp_path)))
    pin = pin_of(source, read_plugin(source.files), None)
    # 0.34.0 removed the first runner's rejection sampler: the code was written for one
    # before.
    assert pin.release == "0.33.0"
    assert "vllm.v1.sample.rejection_sampler, which 0.34.0 lacks" in pin.why


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_a_plugin_naming_no_vllm_is_pinned_by_the_releases_out_when_it_was(
    isolated, monkeypatch
) -> None:
    files = {
        "spec_early/__init__.py": "",
        "spec_early/rejection.py": "from vllm.v1.sample.rejection_sampler import "
        "RejectionSampler\nfrom vllm.v1.outputs import SamplerOutput\n\n\n"
        "def step(ids):\n    return SamplerOutput(sampled_token_ids=ids, logprobs_tensors=None)\n",
    }
    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    plugin = archives.wheel(isolated, "spec-early", "1.0", files, [])
    from reference.revisions import known_releases

    # The index dates every release (an older one: a day long before).
    vllm = [(isolated / f"vllm-{v}-py3-none-any.whl", _RELEASED.get(v, "2025-01-01T00:00:00Z"))
            for v in known_releases()]  # fmt: skip
    # Published in October: its code imports at every release then out (0.33.0 came
    # later), so it is pinned as a requirement on any vLLM is, at the newest then.
    with archives.json_index(
        {"spec-early": [(plugin, "2026-10-01T09:00:00Z")], "vllm": vllm}
    ) as root:
        monkeypatch.setenv("PIP_INDEX_URL", root)
        source = plugin_source("spec-early")
        pin = pin_of(source, read_plugin(source.files), None)
    assert pin.release == "0.30.0"
    assert pin.why == (
        "no requirement on vllm, no version guard: the newest release on 2026-10-01, when "
        "spec-early 1.0 was published"
    )


def test_a_checkouts_files_are_read_as_python_reads_them(tmp_path) -> None:
    folder = plugins.write(plugins.BUILDS_OUTPUT, tmp_path)
    package = folder / "npu_builder"
    (package / "marked.py").write_bytes(b"\xef\xbb\xbfX = 1\r\n")
    (package / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nNAME = '\xe9'\n")
    (package / "broken.py").write_bytes(b"NAME = '\xff'\n")  # no coding: UTF-8, invalid
    source = plugin_source(str(folder))
    files = {p.rsplit("/", 1)[-1]: t for p, t in source.files.items()}
    assert files["marked.py"] == "X = 1\n"
    assert "NAME = '\u00e9'" in files["latin.py"]
    assert [p.rsplit("/", 1)[-1] for p in source.unreadable] == ["broken.py"]
