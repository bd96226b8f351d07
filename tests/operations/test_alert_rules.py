"""The shipped alert rules and scrape example, checked by Prometheus' own promtool; three rules
unit-tested (tests/operations/prometheus/alerts_test.yml)."""

import subprocess
from pathlib import Path

from tests.common.test_logging import ROOT

from .test_prometheus import require

RULES = ROOT / "deploy" / "prometheus" / "gatehouse-alerts.yml"
UNIT_TESTS = Path(__file__).parent / "prometheus" / "alerts_test.yml"


def promtool(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [require("/usr/bin/promtool"), *args], cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_the_alert_rules_are_valid():
    assert "SUCCESS: 13 rules found" in promtool("check", "rules", str(RULES))


def test_the_scrape_example_is_valid():
    promtool("check", "config", str(ROOT / "deploy" / "prometheus" / "prometheus.yml"))


def test_a_queue_nobody_serves_5xx_above_one_percent_and_a_server_not_scraped_fire():
    assert "SUCCESS" in promtool("test", "rules", UNIT_TESTS.name, cwd=UNIT_TESTS.parent)
