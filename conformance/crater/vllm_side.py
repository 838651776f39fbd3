"""The vLLM a plugin is judged against, as the crater reads it: :class:`VllmView`.

Anything ``--revision`` names that has vLLM's text: a release (its texts fetched from
its wheel into the cache, :mod:`conformance.releases.fetch`, once), or a path to a
text, a tree (vLLM's main checkout, a pull request's branch), or a wheel
(:mod:`conformance.releases.sources`).  The view holds what judging a plugin's uses
needs: the version its guards are evaluated for, the surface of ``outputs.py`` and of
the producer files (:mod:`conformance.oracle.text_surface`), the names each module
binds at run time, and, where the wheel or tree shows them, every module it has.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from conformance.crater.guards import Guard
from conformance.crater.inherited_state import VllmAsyncState, vllm_async_state
from conformance.crater.vllm_names import VLLM_ASYNC_OUTPUTS
from conformance.oracle.text_surface import OUTPUTS_MODULE, Surface, surface_of_module
from conformance.oracle.vllm_changes import Change
from conformance.releases.discovery import FoundProducer, find_producers
from conformance.releases.sources import VllmSource, read_source
from conformance.releases.texts import ReleaseTextError, producer_sections
from conformance.releases.wheels import CALLER_TITLE


def vllm_named(label: str) -> str:
    """``0.34.0`` -> ``vLLM 0.34.0``; a text's headline names vLLM already."""
    return label if label.startswith("vLLM ") else f"vLLM {label}"


class VllmViewError(ValueError):
    """Nothing the crater can judge against; one line naming it and the fix."""


@dataclass(frozen=True)
class VllmView:
    """One vLLM as the crater judges plugins against it."""

    label: str  #: as the conformance header names it (``0.34.0``, a text's headline)
    version: str | None  #: what its guards are evaluated for
    surface: Surface = field(compare=False, repr=False)
    #: ``{module: names it binds at run time}`` where its whole text is known
    bound: dict[str, frozenset[str]] = field(compare=False, repr=False)
    #: every ``vllm`` module it has, where the wheel or tree shows them
    modules: frozenset[str] | None = field(compare=False, repr=False)
    #: the text of its ``vllm/v1/outputs.py`` (what a changed method's body now says)
    outputs_text: str = field(default="", compare=False, repr=False)
    #: its own producers in the files known whole, found by what they are
    producers: tuple[FoundProducer, ...] = field(default=(), compare=False, repr=False)
    #: the release whose rules it is judged by: its nearest, for a text of no release
    nearest: str | None = field(default=None, compare=False)
    #: where it came from: ``release``, or a path's ``text``, ``tree``, ``wheel``
    origin: str = field(default="release", compare=False)
    #: ``{(module, class): what its get_output reads and its __init__ sets}`` of vLLM's
    #: own async outputs, where the texts show them (:mod:`.inherited_state`)
    async_states: dict[tuple[str, str], VllmAsyncState] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: the plugin's fallback ``try`` blocks (``(file, line)``) a use of vLLM fails in
    #: here, once the plugin is judged (None: not known)
    failing_tries: frozenset[tuple[str, int]] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def named(self) -> str:
        """How a sentence names it: ``vLLM 0.34.0``, ``vLLM wheel ... = nearest known ...``."""
        return vllm_named(self.label)

    def has_module(self, module: str) -> bool | None:
        """Whether ``module`` (or a package of that name) exists; None when unknown."""
        if module == OUTPUTS_MODULE or module in self.bound:
            return True
        if self.modules is not None:
            return module in self._packages
        if any(m.module == module for m in self.surface.values()):
            return True
        return None

    def runs_under(self, guard: Guard) -> bool | None:
        """Whether code under ``guard`` runs with this vLLM (None: not known)."""
        return guard.holds(self.version, self)

    def tried_and_failed(self, file: str, line: int) -> bool | None:
        """Whether a use of vLLM in the plugin's ``try`` block at ``file:line`` fails
        here, so that its fallback runs (None: not known)."""
        return None if self.failing_tries is None else (file, line) in self.failing_tries

    def imports(self, module: str, name: str) -> bool | None:
        """Whether ``from module import name`` succeeds here (None: not known)."""
        bound = self.bound.get(module)
        if bound is not None and name in bound:
            return True
        if (module, name, "") in self.surface:
            return True  # a class of a module known in part (a producer's)
        if self.has_module(f"{module}.{name}"):
            return True  # ``from vllm.v1.worker import gpu_model_runner``
        if bound is not None or (
            self.has_module(module) is False and not compiled_or_private(module)
        ):
            return False
        return None

    def has_member(self, owner: str, name: str, asked_of: str) -> bool | None:
        """Whether the output type ``owner`` (``module.Type``) has ``name`` here, asked of
        a ``value`` of it or of the ``class`` itself (as ``hasattr`` answers), or of its
        ``field`` table (``__dataclass_fields__``, ``_fields``): None where that is not
        known (a type no release has, a name no release's type had)."""
        module, _, type_name = owner.rpartition(".")
        header = self.surface.get((module, type_name, ""))
        if header is None:
            return None
        member = self.surface.get((module, type_name, name))
        if member is None:
            return False if name in known_members().get((module, type_name), ()) else None
        if asked_of == "field":
            return member.kind == "field"
        if asked_of == "class" and member.kind == "field":
            return _class_attribute(header.shape, member.value)
        return True

    @functools.cached_property
    def _packages(self) -> frozenset[str]:
        """Every module and every package above one."""
        found: set[str] = set()
        for module in self.modules or ():
            parts = module.split(".")
            found.update(".".join(parts[:depth]) for depth in range(1, len(parts) + 1))
        return frozenset(found)

    @functools.cached_property
    def _by_class(self) -> dict[tuple[str, str], dict[str, object]]:
        found: dict[tuple[str, str], dict[str, object]] = {}
        for m in self.surface.values():
            if m.owner and m.name:
                found.setdefault((m.module, m.owner), {})[m.name] = m
        return found

    def class_members(self, module: str, cls: str) -> dict[str, object] | None:
        """``{member name: Member}`` of class ``cls`` in ``module``; None without it."""
        if (module, cls, "") not in self.surface:
            return None
        return dict(self._by_class.get((module, cls), {}))


def view_of(target: str) -> VllmView:
    """The vLLM ``target`` names: a release, or a path to a text, tree or wheel."""
    from conformance.oracle.revisions import names_a_path

    if not target.strip():
        raise VllmViewError(
            "TARGET is empty: give a release such as 0.34.0, or the path of vLLM's outputs.py, "
            "a checkout or a wheel"
        )
    if names_a_path(target):
        return _view_of_path(target)
    if target.strip() == "2025.10":
        raise VllmViewError(
            "the crater judges plugins against vLLM's own code: 2025.10 is a spec page, "
            "not a vLLM; give a release such as 0.34.0 or a path to vLLM's text"
        )
    release = _release(target)
    try:
        return release_view(release)
    except VllmViewError as error:
        from reference.revisions import known_releases

        if release in known_releases():
            raise
        why = str(error).split("; without a package index", 1)[0]
        raise VllmViewError(
            f"{why}; vLLM {release} is no release the suite knows (python -m conformance "
            "--list-revisions lists them): give one, or the path of vLLM's outputs.py, a "
            "checkout or a wheel as TARGET"
        ) from None


def _release(target: str) -> str:
    from conformance.releases.fetch import FetchError, release_name

    try:
        return release_name(target.removeprefix("v"), option="TARGET")
    except FetchError as error:
        raise VllmViewError(
            f"{error}, nor a path: give a release (python -m conformance --list-revisions) "
            "or the path of vLLM's outputs.py, a checkout (its main branch) or a wheel"
        ) from None


@functools.cache
def release_view(release: str) -> VllmView:
    """A published release, its texts fetched once into the cache."""
    from conformance.releases.fetch import FetchError, release_modules, release_outputs

    try:
        path = release_outputs(release, with_modules=True)
        source = read_source(path)
    except (FetchError, ReleaseTextError) as error:
        # The fetch's own hint names the main command's options, not the crater's.
        why = str(error).split("; without a package index", 1)[0]
        if why == str(error):
            raise VllmViewError(why) from None
        raise VllmViewError(
            f"{why}; without a package index, set OUTPUTS_VLLM_RELEASES to a folder of vLLM's "
            "texts (the suite's cache, which nox -s fetch-releases fills where there is one)"
        ) from None
    return _made(source, release, release, release_modules(release, path.parent))


def view_of_text(
    outputs_text: Path, label: str, version: str | None, modules: frozenset[str] | None = None
) -> VllmView:
    """A release text laid out as the cache lays it out (``outputs-X.py.txt``, its
    producers beside it), judged as ``label``: for tests and for folders of texts."""
    try:
        return _made(read_source(outputs_text), label, version, modules)
    except ReleaseTextError as error:
        raise VllmViewError(str(error)) from None


def _view_of_path(target: str) -> VllmView:

    from conformance.releases.text_revision import text_revision

    try:
        judged = text_revision(target)
    except ReleaseTextError as error:
        raise VllmViewError(str(error)) from None
    source = judged.source
    # Two pull requests' outputs.py are told apart by the paths given, in a merged matrix.
    label = judged.headline(target if source.origin == "text" else None)
    view = _made(source, label, source.version or judged.nearest, _modules_of(source))
    return dataclasses.replace(view, nearest=judged.nearest, origin=source.origin)


def _modules_of(source: VllmSource) -> frozenset[str] | None:
    from conformance.releases.fetch import module_names

    if source.origin == "wheel":
        with zipfile.ZipFile(source.path) as archive:
            return frozenset(module_names(archive.namelist()))
    if source.origin in ("tree", "installed"):
        root = source.path
        if not (root / "vllm").is_dir() and root.name == "vllm":
            root = root.parent
        paths = [p.relative_to(root).as_posix() for p in (root / "vllm").rglob("*.py")]
        return frozenset(module_names(paths))
    return None


def _made(
    source: VllmSource, label: str, version: str | None, modules: frozenset[str] | None
) -> VllmView:
    surface = dict(source.surface())
    bound = {OUTPUTS_MODULE: runtime_names(source.outputs)}
    whole: dict[str, str] = {}
    for section in producer_sections(source.producers or ""):
        if section.title not in ("whole file", CALLER_TITLE):
            continue
        try:
            surface.update(surface_of_module(section.body, section.module))
            bound[section.module] = runtime_names(section.body)
        except SyntaxError:
            continue
        if section.title == "whole file":  # a caller holds no producer
            whole[section.module.replace(".", "/") + ".py"] = section.body
    producers = tuple(find_producers(whole))
    states = _async_states(source.producers or "")
    return VllmView(
        label, version, surface, bound, modules, source.outputs, producers, async_states=states
    )


def _async_states(producers: str) -> dict[tuple[str, str], VllmAsyncState]:
    """What each of vLLM's async output classes in the producer texts reads and sets."""
    found: dict[tuple[str, str], VllmAsyncState] = {}
    for section in producer_sections(producers):
        names = VLLM_ASYNC_OUTPUTS.get(section.module, ())
        if not names:
            continue
        try:
            tree = ast.parse(section.body)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name in names:
                found[section.module, node.name] = vllm_async_state(node)
    return found


def runtime_names(source: str) -> frozenset[str]:
    """The names a module binds when it runs: its definitions, assignments and imports,
    not those under ``if TYPE_CHECKING:``."""
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                found.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    found.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(
                node.target, ast.Name
            ):
                if not isinstance(node, ast.AnnAssign) or node.value is not None:
                    found.add(node.target.id)
            elif isinstance(node, ast.Import):
                found.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.update(a.asname or a.name for a in node.names if a.name != "*")
            elif isinstance(node, ast.If):
                test = node.test
                if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                    isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
                ):
                    visit(node.orelse)
                else:
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    try:
        visit(ast.parse(source).body)
    except SyntaxError:
        return frozenset()
    return frozenset(found)


def known_members() -> dict[tuple[str, str], set[str]]:
    """``{(module, class): members}`` any known release ever had: a read of a name that
    no release's class has is not about vLLM's type (the plugin's own attribute)."""
    return _known_members()


@functools.cache
def _known_members() -> dict[tuple[str, str], set[str]]:
    from conformance.releases.known_surfaces import known_surfaces

    found: dict[tuple[str, str], set[str]] = {}
    for surface in known_surfaces().values():
        for member in surface.values():
            if member.owner and member.name:
                found.setdefault((member.module, member.owner), set()).add(
                    member.name.split("@", 1)[0]
                )
    return found


def release_history() -> list[tuple[str, list[Change]]]:
    """Each known release with what it changed against the one before (outputs.py and
    the producer sections the suite ships), oldest first: a break judged without a pin
    is named by the release that made it."""
    return _history()


@functools.cache
def _history() -> list[tuple[str, list[Change]]]:
    from packaging.version import Version

    from conformance.oracle.vllm_changes import changes_between
    from conformance.releases.known_surfaces import known_surfaces

    surfaces = known_surfaces()
    releases = sorted(surfaces, key=Version)
    found = []
    for before, after in itertools.pairwise(releases):
        modules = {m.module for m in surfaces[before].values()} & {
            m.module for m in surfaces[after].values()
        }
        found.append((after, changes_between(surfaces[before], surfaces[after], sorted(modules))))
    return found


def _class_attribute(class_shape: str, default: str) -> bool | None:
    """Whether a field is an attribute of its class: a NamedTuple's always; a dataclass's
    where it has a default that is not a factory (``dataclass`` deletes the rest)."""
    if "NamedTuple" in class_shape:
        return True
    if "dataclass" not in class_shape:
        return None
    if default.startswith("field("):
        return "default=" in default and "default_factory=" not in default
    return bool(default)


def compiled_or_private(module: str) -> bool:
    """``vllm._C``, ``vllm._moe_C``: vLLM's compiled extensions are in no release's list of
    Python modules, so their absence says nothing."""
    return any(part.startswith("_") for part in module.split("."))
