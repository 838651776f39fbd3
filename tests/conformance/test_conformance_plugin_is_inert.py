"""The plugin is loaded into every pytest run; outside a conformance run it does nothing."""

from __future__ import annotations

import suite_runner


def test_unrelated_run_gets_no_header_table_or_backend_resolution(tmp_path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    # A broken OUTPUTS_BACKEND would be a usage error if the plugin resolved it here.
    run = suite_runner.subprocess_run(
        tmp_path, "test_plain.py", report=False, env={"OUTPUTS_BACKEND": "no_such_backend_module"}
    )
    assert run.exit_code == 0, run.output
    assert "conformance" not in run.output
