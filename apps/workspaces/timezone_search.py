"""What a person may type to find a time zone in the Settings picker: its own city, the cities
of the names that link to it (Stockholm and Copenhagen are Europe/Berlin, Calcutta is
Asia/Kolkata), its countries (from tzdata's zone tables) and its abbreviations in winter and
summer (EST, CEST). Built once from the tzdata package."""

from collections import defaultdict
from datetime import datetime
from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo


def _tzdata_file(name: str) -> str:
    return resources.files("tzdata").joinpath("zoneinfo", name).read_text(encoding="utf-8")


def _rows(name: str) -> list[list[str]]:
    return [
        line.split("\t")
        for line in _tzdata_file(name).splitlines()
        if line and not line.startswith("#")
    ]


def _city(name: str) -> str:
    return name.rsplit("/", 1)[-1].replace("_", " ")


@cache
def timezone_keywords() -> dict[str, str]:
    """Canonical zone name → the words that find it, lower case, space-separated."""
    countries = {row[0]: row[1] for row in _rows("iso3166.tab") if len(row) > 1}
    links: dict[str, str] = {}  # a linked (legacy or merged) name → the zone it is
    for line in _tzdata_file("tzdata.zi").splitlines():
        if line.startswith("L "):
            _, target, link = line.split()
            links[link] = target
    words: dict[str, set[str]] = defaultdict(set)
    for link, target in links.items():
        words[target].add(_city(link))
    for table in ("zone1970.tab", "zone.tab"):
        for row in _rows(table):
            if len(row) < 3:
                continue
            zone = links.get(row[2], row[2])
            words[zone] |= {countries.get(code, code) for code in row[0].split(",")}
            if len(row) > 3:
                words[zone].add(row[3])
    year = datetime.now().year
    for zone in list(words):
        try:
            info = ZoneInfo(zone)
        except (KeyError, ValueError):
            continue
        for month in (1, 7):
            words[zone].add(str(info.tzname(datetime(year, month, 15))))
    return {zone: " ".join(sorted(found)).lower() for zone, found in words.items()}
