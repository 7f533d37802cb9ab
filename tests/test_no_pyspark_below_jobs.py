"""lib/ and crawldb/ never import pyspark: they run and test without Spark."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCKER = """
import sys, importlib, pkgutil
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark.") or name == "delta":
            raise ImportError("pyspark is blocked in this test: " + name)
sys.meta_path.insert(0, Block())
import lib, crawldb
for package in (lib, crawldb):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
        print(module.name)
"""


def test_lib_and_crawldb_import_without_pyspark():
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    imported = done.stdout.split()
    assert "lib.fetching.fetcher" in imported and "crawldb.merge" in imported
