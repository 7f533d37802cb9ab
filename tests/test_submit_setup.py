"""submit.sh's own failures get an exit code of their own, 4, never 1 (which generate
returns when nothing is due) nor 2 (a mistake in the command): no Java or one too old
(checked first, naming the version needed), the Python packages or the Delta Lake jars
that could not be installed. Each case through a real submit.sh."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXIT_SETUP = 4


def submit(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(root / "submit.sh"), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def checkout_copy(tmp_path: Path, venv: bool) -> Path:
    """submit.sh, its conf folder and its package files in a folder of their own; with
    ``venv``, the checkout's ready .venv linked in (its set-up stamp then matches)."""
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("submit.sh", "setup.cfg", "pyproject.toml"):
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(ROOT / "conf", root / "conf")
    if venv:
        (root / ".venv").symlink_to(ROOT / ".venv", target_is_directory=True)
    return root


def test_no_java_is_told_first_with_the_version_needed(tmp_path):
    for job in ("inject", "test", "setup"):
        done = submit(ROOT, job, "--data", str(tmp_path), JAVA_HOME=str(tmp_path / "no-java"))
        assert done.returncode == EXIT_SETUP, done.stderr
        assert done.stderr.startswith("submit.sh: Java 17 or later is needed and none was found")
        assert str(tmp_path / "no-java" / "bin" / "java") in done.stderr


def test_a_java_too_old_is_named(tmp_path):
    java = tmp_path / "jdk8" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\necho 'java version \"1.8.0_292\"' >&2\n")
    java.chmod(0o755)
    done = submit(ROOT, "generate", "--data", str(tmp_path), JAVA_HOME=str(java.parent.parent))
    assert done.returncode == EXIT_SETUP
    assert "Java 17 or later is needed" in done.stderr and '"1.8.0_292"' in done.stderr


def test_packages_that_do_not_install_exit_4_with_pip_s_words(tmp_path):
    root = checkout_copy(tmp_path, venv=False)
    (root / "pyproject.toml").write_text("[build-system\nnot toml\n")
    # No index: pip upgrades nothing, offline, and then fails on the project's files.
    done = submit(root, "setup", PIP_NO_INDEX="1")
    assert done.returncode == EXIT_SETUP, done.stderr
    assert "installing the Python packages failed" in done.stderr
    assert "TOMLDecodeError" in done.stderr  # the end of pip's log, naming the cause


@pytest.mark.spark  # spark-submit's Ivy, through submit.sh
def test_jars_that_cannot_be_fetched_exit_4(tmp_path):
    root = checkout_copy(tmp_path, venv=True)
    settings = (root / "conf" / "ivysettings.xml").read_text()
    # A repository that answers nothing: port 9 (discard) on loopback.
    (root / "conf" / "ivysettings.xml").write_text(
        settings.replace("https://repo1.maven.org/maven2/", "http://127.0.0.1:9/maven2/")
    )
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1/\n")
    cache = tmp_path / "cache"
    done = submit(
        root, "inject", "--seeds", str(seeds), "--data", str(tmp_path / "d"), TRAWL_CACHE=str(cache)
    )
    assert done.returncode == EXIT_SETUP, done.stderr
    assert "the Delta Lake jars could not be fetched" in done.stderr
    assert not (tmp_path / "d" / "crawldb").exists()
