"""The notebooks in notebooks/ execute top to bottom and show what they promise.

Each notebook is run with nbclient in fast mode (ARSCHLOCH_NOTEBOOK_FAST=1: every training,
evaluation and tournament budget shrunk to seconds), from notebooks/, on a kernel that runs
this very interpreter (a kernelspec written to a temporary JUPYTER_PATH), with its outputs
sent to a temporary folder (ARSCHLOCH_NOTEBOOK_OUT).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# the dev extra (scripts/env.sh installs it): a missing one fails the run, not skips it
import ipykernel  # noqa: F401  (the notebooks' kernel)
import nbclient
import nbformat
import pytest

pytestmark = pytest.mark.train_extra

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "arschloch-test"
CELL_TIMEOUT = 300


@pytest.fixture
def kernel_env(tmp_path, monkeypatch):
    """A kernelspec for sys.executable, and the environment the kernel inherits."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "arschloch test kernel", "language": "python",
        "env": {"ARSCHLOCH_NOTEBOOK_FAST": "1"},
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("ARSCHLOCH_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    return tmp_path


def execute(name: str, out: Path, monkeypatch, again_from: str | None = None
            ) -> nbformat.NotebookNode:
    """Runs notebooks/<name> in fast mode from notebooks/ and returns the executed notebook;
    with ``again_from``, then runs once more, in the same kernel, every cell from the first
    whose source holds that text on (as a person re-running cells does)."""
    monkeypatch.setenv("ARSCHLOCH_NOTEBOOK_OUT", str(out))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name=KERNEL,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        if again_from is not None:
            start = next(i for i, c in enumerate(nb.cells) if again_from in c.source)
            for i in range(start, len(nb.cells)):
                client.execute_cell(nb.cells[i], i)
    return nb


def texts(nb) -> str:
    """Every text a code cell printed or displayed, joined."""
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append(output["text"])
            elif "data" in output and "text/plain" in output["data"]:
                parts.append(output["data"]["text/plain"])
    return "\n".join(parts)


def images(nb) -> int:
    return sum("image/png" in output.get("data", {})
               for cell in nb.cells for output in cell.get("outputs", []))


@pytest.mark.parametrize("name", ["quickstart.ipynb", "tournament_analysis.ipynb"])
def test_notebooks_are_stored_clean(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), \
        f"{name} is stored with outputs; clear them before committing"
    assert "ARSCHLOCH_NOTEBOOK_FAST" in code[0].source
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= len(code) // 2


def test_quickstart_runs_and_runs_again(kernel_env, monkeypatch):
    """Top to bottom, then from the training cell on once more (the outputs checked are the
    second run's): a second run trains into a folder of its own."""
    out = kernel_env / "quickstart"
    nb = execute("quickstart.ipynb", out, monkeypatch, again_from="train(cfg")
    text = texts(nb)
    assert "fast mode: True" in text
    assert "table: empty (lead)" in text                      # env.render()
    assert "match over; winners:" in text                     # the random game to its end
    assert "== match 0 (culo" in text and "-- round end:" in text  # the record as text
    assert "4096 learner steps" in text
    assert "trained in" in text
    assert "vs random: rank points/round" in text and "vs greedy: rank points/round" in text
    assert "bundle written to" in text and "manifest.json" in text
    assert "paired differences on identical deals" in text  # the bundle's tournament
    assert images(nb) >= 1                                    # the learning curve
    assert len(list(out.glob("run-*/latest.json"))) == 2
    assert (out / "bots" / "quickstart_bot" / "policy.onnx").is_file()


def test_tournament_analysis_runs(kernel_env, monkeypatch):
    out = kernel_env / "tournament"
    nb = execute("tournament_analysis.ipynb", out, monkeypatch)
    text = texts(nb)
    assert "fast mode: True" in text
    assert "10 deal(s) x 4 seating(s)" in text                # heads-up headline
    assert "10 deal(s) x 12 seating(s)" in text               # mixed table headline
    assert "| greedy" in text and "| lowest" in text          # the tables
    assert "heads-up: greedy - random" in text                # paired differences
    assert "greedy wins" in text                              # session mode
    assert "== match 0 (culo" in text and "-- round end:" in text
    assert "same hands in all 4 seatings of deal 0: True" in text
    assert "replay check: 8 match(es) re-played, 0 with errors" in text
    assert "tampered record: line" in text
    assert images(nb) >= 2                                    # scores/places and paired plot
    assert json.loads((out / "heads_up.json").read_text())["deals_done"] == 10
