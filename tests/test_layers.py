"""The layers of the code hold (import-linter's contracts in .importlinter): lib and
crawldb below engine, engine below the jobs, no job entry point importing another but
for crawl and demo, no import cycles. The contracts are also shown to catch a breach."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("jobs", "engine", "crawldb", "lib", "api", "testweb")
LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT), "--no-cache", "--config", str(root / ".importlinter")],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_import_contracts_are_kept():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def scratch_copy(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / ".importlinter", tmp_path)
    return tmp_path


def test_a_lib_module_importing_a_job_breaks_the_layers(tmp_path):
    root = scratch_copy(tmp_path)
    urls = root / "lib" / "url" / "normalize.py"
    urls.write_text(urls.read_text() + "\nfrom engine.runtime.layout import DataDir  # noqa\n")
    done = lint(root)
    assert done.returncode == 1, done.stdout
    assert "jobs and api above engine, above crawldb, above lib BROKEN" in done.stdout
    assert "lib.url.normalize -> engine.runtime.layout" in done.stdout


def test_a_job_importing_another_or_a_cycle_is_caught(tmp_path):
    root = scratch_copy(tmp_path)
    readseg = root / "jobs" / "readseg.py"
    readseg.write_text(readseg.read_text() + "\nfrom jobs import readdb  # noqa\n")
    layout = root / "engine" / "runtime" / "layout.py"
    layout.write_text(layout.read_text() + "\nfrom engine.runtime import session  # noqa\n")
    session = root / "engine" / "runtime" / "session.py"
    session.write_text(session.read_text() + "\nfrom engine.runtime import layout  # noqa\n")
    done = lint(root)
    assert done.returncode == 1, done.stdout
    assert "but for the composite crawl and demo BROKEN" in done.stdout
    assert "no import cycles between the modules of a package BROKEN" in done.stdout


def test_the_runtime_importing_an_executor_breaks_engines_layers(tmp_path):
    root = scratch_copy(tmp_path)
    lock = root / "engine" / "runtime" / "lock.py"
    lock.write_text(lock.read_text() + "\nfrom engine.executors import seeds  # noqa\n")
    done = lint(root)
    assert done.returncode == 1, done.stdout
    assert "engine's packages" in done.stdout and "BROKEN" in done.stdout
    assert "engine.runtime.lock -> engine.executors.seeds" in done.stdout
