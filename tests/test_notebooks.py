"""The analysts' notebooks run top to bottom, in a real Jupyter kernel through papermill,
against the data directory of the three-round crawl; their plots are exported as PNG
files under build/notebook-plots/ (kept after the run, for the record)."""

import base64
import json
from pathlib import Path

import papermill
import pytest
from conftest import ROOT

pytestmark = [pytest.mark.spark, pytest.mark.web]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PLOTS = ROOT / "build" / "notebook-plots"


def test_there_are_notebooks():
    assert NOTEBOOKS


def test_notebooks_take_data_dir_as_a_papermill_parameter():
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        tagged = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1 and "data_dir = None" in "".join(tagged[0]["source"])
        assert any("TRAWL_DATA" in "".join(c["source"]) for c in cells)


def export_plots(executed: dict, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    written = []
    for number, cell in enumerate(executed["cells"]):
        for index, output in enumerate(cell.get("outputs", [])):
            image = output.get("data", {}).get("image/png")
            if image:
                path = folder / f"cell{number:02d}-{index}.png"
                path.write_bytes(base64.b64decode(image))
                written.append(path)
    return written


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom_with_plots(path, crawled, tmp_path):
    data, rows, _ = crawled
    out = tmp_path / path.name
    # Raises PapermillExecutionError, naming the cell, if any cell fails.
    papermill.execute_notebook(
        str(path),
        str(out),
        parameters={"data_dir": str(data.root)},
        kernel_name="python3",
        cwd=str(ROOT),
        progress_bar=False,
        execution_timeout=600,
    )
    executed = json.loads(out.read_text())
    printed = "".join(
        "".join(o.get("text", ""))
        for c in executed["cells"]
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )
    assert f"{len(rows)} URLs in {data.crawldb}" in printed
    plots = export_plots(executed, PLOTS / path.stem)
    assert len(plots) >= 7, printed[-3000:]
    assert all(p.stat().st_size > 5000 for p in plots)  # real pictures, not empty axes
    print(f"{len(plots)} plots written to {PLOTS / path.stem}")
