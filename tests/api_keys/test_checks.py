"""The deploy checks: a weak key-hash secret is an error, per-process rate limits a warning."""

import subprocess
import sys

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from apps.common.server_secrets import hash_secret_problem

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
    settings.SECRET_KEY = STRONG[::-1]
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert gatehouse_issues() == []
    settings.DEBUG = True
    settings.API_KEY_HASH_SECRET = "dev-only-api-key-hash-secret"
    assert gatehouse_issues() == []


def test_per_process_rate_limits_are_a_deploy_warning(settings):
    settings.DEBUG = False
    settings.API_KEY_HASH_SECRET = STRONG
    settings.SECRET_KEY = STRONG[::-1]
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


def env_example(name: str) -> str:
    from pathlib import Path

    for line in (Path(__file__).resolve().parents[2] / ".env.example").read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} is not in .env.example")


@pytest.mark.parametrize("value", [env_example("SECRET_KEY"), "short-Xy7-but-random"])
def test_a_placeholder_or_short_secret_key_is_refused_when_debug_is_off(settings, value):
    settings.DEBUG = False
    settings.API_KEY_HASH_SECRET = STRONG
    settings.SECRET_KEY = value
    with pytest.raises(SystemCheckError, match="gatehouse.E002"):
        call_command("check")


def test_the_wsgi_application_refuses_to_start_with_the_examples_secret_key(tmp_path):
    import os
    from pathlib import Path

    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": env_example("SECRET_KEY"),
        "API_KEY_HASH_SECRET": STRONG,
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
    }
    result = subprocess.run(
        [sys.executable, "-c", "import config.wsgi"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "SECRET_KEY is a placeholder" in result.stderr


@pytest.mark.parametrize(
    "value, says",
    [
        ("{not json", "not JSON"),
        ('{"public_keys": [{"key_identifier": "a", "key": "nope"}]}', "not a PEM public key"),
        ('{"keys": []}', "no list of public keys"),
    ],
)
def test_malformed_secret_scanning_keys_are_a_check_error(settings, value, says):
    settings.SECRET_SCANNING_PUBLIC_KEYS = value
    with pytest.raises(SystemCheckError, match=f"gatehouse.E003.*{says}|{says}.*gatehouse.E003"):
        call_command("check")
