"""Compile locale/*/LC_MESSAGES/django.po into django.mo, with nothing but Python.

The catalogue holds Gatehouse's own wording for django-allauth's pages ("Two-factor
authentication", "E-mail", "Passkeys"): one voice on every page. `manage.py compilemessages`
would need GNU gettext; this writes the same .mo format (GNU gettext's, little-endian).
A test fails when a .mo is older than its .po.
"""

import ast
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def read_po(path: Path) -> dict[str, str]:
    """msgid → msgstr of a simple catalogue: one-line or continued strings, no plurals."""
    entries: dict[str, str] = {}
    key, current, target = None, "", None
    for raw in path.read_text(encoding="utf-8").splitlines() + [""]:
        line = raw.strip()
        if line.startswith("msgid "):
            if key is not None:
                entries[key] = current
            key, current, target = ast.literal_eval(line[6:]), "", "id"
        elif line.startswith("msgstr "):
            current, target = ast.literal_eval(line[7:]), "str"
        elif line.startswith('"') and target == "id":
            key = (key or "") + ast.literal_eval(line)
        elif line.startswith('"') and target == "str":
            current += ast.literal_eval(line)
    if key is not None:
        entries[key] = current
    return entries


def mo_bytes(entries: dict[str, str]) -> bytes:
    keys = sorted(entries)
    ids = b"".join(k.encode() + b"\0" for k in keys)
    strs = b"".join(entries[k].encode() + b"\0" for k in keys)
    start = 7 * 4 + 16 * len(keys)
    id_table, offset = [], start
    for k in keys:
        id_table += [len(k.encode()), offset]
        offset += len(k.encode()) + 1
    str_table, offset = [], start + len(ids)
    for k in keys:
        str_table += [len(entries[k].encode()), offset]
        offset += len(entries[k].encode()) + 1
    header = struct.pack("Iiiiiii", 0x950412DE, 0, len(keys), 28, 28 + 8 * len(keys), 0, 0)
    tables = struct.pack(f"{len(id_table)}i", *id_table) + struct.pack(
        f"{len(str_table)}i", *str_table
    )
    return header + tables + ids + strs


def main() -> None:
    for po in sorted((ROOT / "locale").glob("*/LC_MESSAGES/*.po")):
        po.with_suffix(".mo").write_bytes(mo_bytes(read_po(po)))
        print(f"Compiled {po.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
