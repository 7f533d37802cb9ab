"""The analysts' notebooks run top to bottom against a real crawl's data directory.

Code cells are executed in order in one namespace, with the ``parameters`` cell's
``data_dir`` replaced as papermill would (the SparkSession is the test run's own).
"""

import json
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.spark
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def code_cells(path: Path) -> list[tuple[list[str], str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        (cell["metadata"].get("tags", []), "".join(cell["source"]))
        for cell in cells
        if cell["cell_type"] == "code"
    ]


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(path, crawled, capsys):
    data, rows, _ = crawled
    namespace: dict = {}
    cells = code_cells(path)
    assert any("parameters" in tags for tags, _ in cells), "a cell tagged parameters"
    for tags, source in cells:
        if "parameters" in tags:
            source += f"\ndata_dir = {str(data.root)!r}"
        exec(compile(source, f"{path.name}", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert f"{len(rows)} URLs in {data.crawldb}" in printed
    assert "fetched" in printed
