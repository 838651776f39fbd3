"""vLLM modules a plugin's import hook hands its own modules for (vllm-kunlun's
``builtins.__import__``): a use of such a module is of the plugin's own code."""

from __future__ import annotations

import ast
import re

from conformance.crater.world import module_name

#: Where a file may hand its own modules for vLLM's: an import hook, a finder, or
#: ``sys.modules["vllm...."] = ...``.
_IMPORT_HOOK = re.compile(
    r"builtins\.__import__\s*=|sys\.meta_path\.(?:insert|append)|sys\.modules\[\s*['\"]vllm\."
)


def redirected_modules(files: dict[str, str]) -> dict[str, str]:
    """``{vLLM module: the plugin's module}`` where the plugin's import hook hands one for
    the other: a mapping of the two names (``{"vllm.v1.sample.rejection_sampler":
    "vllm_kunlun.v1.sample.rejection_sampler"}``) in a file that installs a hook, or a
    ``sys.modules["vllm...."] = module`` assignment."""
    own = {module_name(p).split(".")[0] for p in files if p.endswith(".py")} - {"", "vllm"}
    found: dict[str, str] = {}
    for path, text in sorted(files.items()):
        if not path.endswith(".py") or not _IMPORT_HOOK.search(text):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        imported = _own_modules_imported(tree, own)
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    vllm_name, plugin_name = _string(key), _string(value)
                    if vllm_name.startswith("vllm.") and plugin_name.split(".")[0] in own:
                        found[vllm_name] = plugin_name
            elif isinstance(node, ast.Assign):
                # Only a module of the plugin's own handed out: a copy of vLLM's module
                # with a few names changed (a SimpleNamespace of it) is still vLLM's.
                value = node.value
                handed = imported.get(value.id) if isinstance(value, ast.Name) else None
                for target in node.targets:
                    if (
                        handed is not None
                        and isinstance(target, ast.Subscript)
                        and ast.unparse(target.value) == "sys.modules"
                        and _string(target.slice).startswith("vllm.")
                    ):
                        found[_string(target.slice)] = handed
    return found


def _own_modules_imported(tree: ast.Module, own: set[str]) -> dict[str, str]:
    """``{name: module}`` a file binds to one of the plugin's own modules by an import
    (``from vllm_ms.parsers import deepseek``: ``deepseek`` is ``vllm_ms.parsers.deepseek``)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in own:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in own and alias.asname:
                    found[alias.asname] = alias.name
    return found


def _string(node: ast.expr | None) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
