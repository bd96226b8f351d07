"""The deploy checks: a weak key-hash secret is an error, per-process rate limits a warning."""

import subprocess
import sys

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from apps.api_keys.checks import hash_secret_problem

STRONG = "kJ3v9QpX2mZr7TfW1yBn8HcL5sDg0aEu4iKoPq6MxVbN"


@pytest.mark.parametrize(
    "value",
    ["change-me-too", "dev-only-api-key-hash-secret", "short-but-random-Xy7", "a" * 64, ""],
)
def test_weak_or_placeholder_secrets_are_refused_when_debug_is_off(settings, value):
    settings.DEBUG = False
    settings.API_KEY_HASH_SECRET = value
    assert hash_secret_problem(value) is not None
    with pytest.raises(SystemCheckError, match="gatehouse.E001"):
        call_command("check", "--deploy")


def gatehouse_issues() -> list[str]:
    return [
        issue.id
        for issue in run_checks(include_deployment_checks=True)
        if issue.id.startswith("gatehouse.")
    ]


def test_a_strong_secret_passes_and_debug_accepts_the_development_default(settings):
    settings.DEBUG = False
    settings.API_KEY_HASH_SECRET = STRONG
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert gatehouse_issues() == []
    settings.DEBUG = True
    settings.API_KEY_HASH_SECRET = "dev-only-api-key-hash-secret"
    assert gatehouse_issues() == []


def test_per_process_rate_limits_are_a_deploy_warning(settings):
    settings.DEBUG = False
    settings.API_KEY_HASH_SECRET = STRONG
    settings.REDIS_URL = ""
    with pytest.raises(SystemCheckError, match="gatehouse.W001"):
        call_command("check", "--deploy", "--fail-level", "WARNING")


def test_the_wsgi_application_refuses_to_start_with_a_placeholder_secret(tmp_path):
    env = {
        "DEBUG": "false",
        "SECRET_KEY": STRONG + STRONG,
        "API_KEY_HASH_SECRET": "change-me-too",
        "PATH": "/usr/bin:/bin",
    }
    result = subprocess.run(
        [sys.executable, "-c", "import config.wsgi"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "API_KEY_HASH_SECRET is a placeholder" in result.stderr
