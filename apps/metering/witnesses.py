"""Records of a key's use besides its own last-use stamp (the request log's entries), asked
before a key is revoked for not being used (apps/idle_keys)."""

from collections.abc import Callable
from datetime import datetime

UseWitness = Callable[[int, datetime], bool]
_use_witnesses: list[UseWitness] = []


def register_use_witness(witness: UseWitness) -> None:
    """Add a record of use beside the key's own stamp: `witness(key_id, since)` says whether
    the key made a request at or after `since` (the request log registers its entries)."""
    _use_witnesses.append(witness)


def used_since(key_id: int, since: datetime) -> bool:
    """Whether any record of use besides the key's stamp has the key used at or after `since`:
    asked before a key is revoked as idle."""
    return any(witness(key_id, since) for witness in _use_witnesses)
