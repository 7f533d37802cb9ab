"""The alerting rules shipped (conf/prometheus/trawl-alerts.yml) pass Prometheus' own
checks: ``promtool check rules``, and ``promtool test rules`` on their unit tests
(trawl-alerts.test.yml: each alert fires on its case and stays quiet on a healthy
crawl's); a rule changed so that it no longer fires where it must fails them."""

import shutil
import subprocess

from conftest import ROOT

RULES = ROOT / "conf" / "prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def promtool(*args: str, cwd=RULES) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_rules_are_valid():
    done = promtool("check", "rules", "trawl-alerts.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 7 rules found" in done.stdout


def test_the_rules_pass_their_unit_tests():
    done = promtool("test", "rules", "trawl-alerts.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_rule_that_no_longer_fires_fails_its_unit_test(tmp_path):
    for name in ("trawl-alerts.yml", "trawl-alerts.test.yml"):
        shutil.copy(RULES / name, tmp_path / name)
    rules = tmp_path / "trawl-alerts.yml"
    rules.write_text(rules.read_text().replace("< 0.1", "< 0.01"))  # disk: 5% free is fine
    done = promtool("test", "rules", "trawl-alerts.test.yml", cwd=tmp_path)
    assert done.returncode != 0 and "TrawlDiskNearlyFull" in done.stdout + done.stderr
