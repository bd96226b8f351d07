import hashlib
import math
import re

import pytest

from apps.api_keys import tokens


def test_workspace_secret_has_its_prefix_and_length():
    secret = tokens.generate_secret("workspace")
    assert re.fullmatch(r"gwk_[0-9A-Za-z]{38}", secret)


def test_member_secret_has_its_own_prefix():
    assert tokens.generate_secret("member").startswith("gmk_")


def test_random_part_holds_at_least_160_bits():
    assert tokens.RANDOM_LENGTH * math.log2(len(tokens.ALPHABET)) >= 160


def test_secrets_are_unique():
    assert len({tokens.generate_secret("workspace") for _ in range(1000)}) == 1000


def test_valid_secret_passes_the_checksum():
    secret = tokens.generate_secret("workspace")
    assert tokens.kind_of(secret) == "workspace"
    assert tokens.kind_of(tokens.generate_secret("member")) == "member"


@pytest.mark.parametrize("position", [5, 20, 35, -1])
def test_one_changed_character_fails_the_checksum(position):
    secret = tokens.generate_secret("workspace")
    swapped = "A" if secret[position] != "A" else "B"
    typo = secret[:position] + swapped + (secret[position + 1 :] if position != -1 else "")
    assert tokens.kind_of(typo) is None


@pytest.mark.parametrize(
    "raw",
    ["", "gwk_", "xyz_" + "a" * 38, "gwk-" + "a" * 38, "gwk_" + "!" * 38, "gwk_short"],
)
def test_malformed_strings_are_refused_offline(raw):
    assert tokens.kind_of(raw) is None


def test_changing_the_prefix_breaks_the_checksum():
    secret = tokens.generate_secret("workspace")
    assert tokens.kind_of("gmk" + secret[3:]) is None


def test_hash_is_keyed_by_the_server_secret(settings):
    secret = tokens.generate_secret("workspace")
    first = tokens.hash_secret(secret)
    assert first != hashlib.sha256(secret.encode()).hexdigest()
    settings.API_KEY_HASH_SECRET = "another-server-secret"
    assert tokens.hash_secret(secret) != first


def test_hint_shows_prefix_and_last_four_only():
    secret = tokens.generate_secret("workspace")
    assert tokens.hint_for(secret) == f"gwk_…{secret[-4:]}"
