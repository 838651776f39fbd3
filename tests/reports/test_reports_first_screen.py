"""The report's first screen at 1400 px, in headless Chromium: the verdicts and the
conformance outcome in view, nothing to scroll sideways, however long a name.

Chromium lays the page out for real (a script added to a copy of the page measures it
and writes what it found into the DOM Chromium dumps); without Chromium installed
(``apt install chromium``) the layout test skips, and the shortening is still tested.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from reports.cli import EXIT_OK, main
from reports.sections.header import ENVIRONMENT_SHOWN, short_environment

FIXTURES = Path(__file__).parent / "fixtures"
RESULTS = FIXTURES / "project-asv" / "results"
CONFORMANCE = FIXTURES / "conformance-report.json"
#: The name asv gave a nox session's interpreter under a pytest temporary folder.
LONG_ENVIRONMENT = "existing-py_tmp_pytest-of-root_pytest-12_test_the_main_job_writes_0_checkout_.nox_suite_bin_python"
WIDTH, HEIGHT = 1400, 900

#: Measures the page as laid out, and writes it where --dump-dom shows it.
MEASURE = """
<script>
const screenful = [...document.querySelectorAll('.table-scroll')].filter(
  (box) => box.getBoundingClientRect().top < window.innerHeight);
const verdict = document.getElementById('verdict');
document.body.setAttribute('data-measured', JSON.stringify({
  sideways: screenful.filter((box) => box.scrollWidth > box.clientWidth + 1).length,
  page_sideways: document.documentElement.scrollWidth > window.innerWidth,
  verdict_top: verdict ? verdict.getBoundingClientRect().top : null,
  width: window.innerWidth,
}));
</script>
"""


def _chromium() -> str | None:
    return next(
        (found for name in ("chromium", "chromium-browser", "google-chrome")
         if (found := shutil.which(name))),
        None,
    )  # fmt: skip


def test_a_long_environment_name_keeps_its_two_ends() -> None:
    shown = short_environment(LONG_ENVIRONMENT)
    assert len(shown) <= ENVIRONMENT_SHOWN
    assert shown.startswith("existing-py_") and shown.endswith("nox_suite_bin_python")
    assert short_environment("existing-py_usr_bin_python3") == "existing-py_usr_bin_python3"


def _report_with_a_long_environment(folder: Path) -> Path:
    results = folder / "results"
    shutil.copytree(RESULTS, results)
    for path in results.rglob("*-existing-py_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["env_name"] = LONG_ENVIRONMENT
        path.write_text(json.dumps(data), encoding="utf-8")
    out = folder / "out"
    args = ["--quiet", "--results", str(results), "--conformance", str(CONFORMANCE)]
    assert main([*args, "--out", str(out)]) == EXIT_OK
    return out / "report.html"


def test_the_first_screen_holds_the_verdicts_without_scrolling_sideways(tmp_path) -> None:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("Chromium is not installed (apt install chromium)")
    report = _report_with_a_long_environment(tmp_path)
    assert LONG_ENVIRONMENT not in report.read_text(encoding="utf-8")
    measured = tmp_path / "measured.html"
    measured.write_text(
        report.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"),
        encoding="utf-8",
    )
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={WIDTH},{HEIGHT}", "--dump-dom", measured.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    marker = 'data-measured="'
    assert marker in done.stdout, done.stderr[-2000:]
    found = json.loads(done.stdout.split(marker, 1)[1].split('"', 1)[0].replace("&quot;", '"'))
    assert found["width"] == WIDTH
    assert found["sideways"] == 0 and not found["page_sideways"], found
    assert found["verdict_top"] is not None and found["verdict_top"] < HEIGHT, found


def test_the_verdicts_open_with_conformance_then_failures_and_no_data_last(tmp_path) -> None:
    out = tmp_path / "out"
    args = ["--quiet", "--results", str(RESULTS), "--conformance", str(CONFORMANCE)]
    assert main([*args, "--out", str(out)]) == EXIT_OK
    summary = (out / "summary.md").read_text(encoding="utf-8")
    listed = summary.split("## Verdict\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert listed[0].startswith("- Conformance of backend")
    order = {"**FAIL**": 0, "**TOO CLOSE**": 1, "**PASS**": 2, ": no data": 4}
    ranks = [next((r for word, r in order.items() if word in line), 3) for line in listed[1:]]
    assert ranks == sorted(ranks) and ranks[-1] == 4, listed
