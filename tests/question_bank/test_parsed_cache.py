"""The cache of parsed data files (question_bank.parsed_cache, issue 40): a hit gives what parsing
gives, a changed file is parsed again, and a cache that cannot be used is only slower."""

import datetime
import shutil
from pathlib import Path

import pytest

from question_bank import curated, parsed_cache

RAW = b'title = "x"\n[[item]]\nid = "a"\nvalues = [1, 2.5, true]\n'


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(parsed_cache.ENV_VAR, str(folder))
    return folder


class Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self, raw):
        import tomllib

        self.calls += 1
        return tomllib.loads(raw.decode())


def test_second_load_is_read_from_the_cache(cache):
    parse = Counting()
    first = parsed_cache.load(RAW, parse)
    again = parsed_cache.load(RAW, parse)
    assert parse.calls == 1
    assert again == first == {"title": "x", "item": [{"id": "a", "values": [1, 2.5, True]}]}
    assert parsed_cache.entry_path(RAW, "toml").parent == cache / "parsed"
    assert len(list((cache / "parsed").glob("*.marshal"))) == 1


def test_changed_bytes_are_parsed_again(cache):
    parse = Counting()
    parsed_cache.load(RAW, parse)
    changed = RAW.replace(b'"x"', b'"y"')
    assert parsed_cache.load(changed, parse)["title"] == "y"
    assert parse.calls == 2
    assert parsed_cache.entry_path(changed, "toml") != parsed_cache.entry_path(RAW, "toml")


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", None], ids=["empty", "garbage", "another file's"])
def test_a_damaged_entry_is_parsed_again(cache, damage):
    parse = Counting()
    parsed_cache.load(RAW, parse)
    path = parsed_cache.entry_path(RAW, "toml")
    if damage is None:  # a whole, readable entry, but for other bytes
        other = b'title = "other"\n'
        parsed_cache.load(other, parse)
        shutil.copy(parsed_cache.entry_path(other, "toml"), path)
    else:
        path.write_bytes(damage)
    assert parsed_cache.load(RAW, parse)["title"] == "x"
    assert parse.calls == (3 if damage is None else 2)


def test_an_unwritable_cache_only_costs_time(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(parsed_cache.ENV_VAR, str(blocker / "cache"))
    parse = Counting()
    assert parsed_cache.load(RAW, parse) == parsed_cache.load(RAW, parse)
    assert parse.calls == 2


def test_a_value_marshal_cannot_write_is_not_cached(cache):
    when = b"day = 2024-05-01\n"
    parse = Counting()
    assert parsed_cache.load(when, parse) == {"day": datetime.date(2024, 5, 1)}
    assert parsed_cache.load(when, parse) == {"day": datetime.date(2024, 5, 1)}
    assert parse.calls == 2


def test_parse_errors_propagate_and_cache_nothing(cache):
    import tomllib

    with pytest.raises(tomllib.TOMLDecodeError):
        parsed_cache.load(b"= broken", Counting())
    assert not list(cache.rglob("*.marshal"))


def test_old_entries_are_pruned(cache, monkeypatch):
    monkeypatch.setattr(parsed_cache, "MAX_ENTRIES", 3)
    for i in range(6):
        parsed_cache.load(f"n = {i}\n".encode(), Counting())
    assert len(list((cache / "parsed").glob("*.marshal"))) == 3


def test_default_folder_is_the_user_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv(parsed_cache.ENV_VAR, raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert parsed_cache.cache_dir() == tmp_path / "qkv"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert parsed_cache.cache_dir() == tmp_path / "home" / ".cache" / "qkv"


def test_a_changed_data_file_changes_the_index(cache, tmp_path):
    """The curated index read through the cache: a data file edited after it was cached is read
    as it is now (and a bad edit is reported as without the cache)."""
    data = tmp_path / "data"
    shutil.copytree(curated.DATA_DIR, data)
    first = {e.id: e.topic for e in curated.index(data)}
    assert len(list((cache / "parsed").glob("*.marshal"))) == len(list(data.glob("*.toml")))
    path = data / "seed000.toml"
    text = path.read_text(encoding="utf-8")
    item = next(e for e in curated.index(data) if e.data_file == "seed000.toml")
    old = f'id = "{item.id}"'
    assert text.count(old) == 1
    block = text[text.index(old):]
    topic_line = next(ln for ln in block.splitlines() if ln.startswith("topic = "))
    new_topic = "counting" if item.topic != "counting" else "attention"
    start = text.index(old) + block.index(topic_line)
    path.write_text(text[:start] + f'topic = "{new_topic}"' + text[start + len(topic_line):], encoding="utf-8")
    curated._index.cache_clear()  # the per-process cache; the parsed-file cache stays
    second = {e.id: e.topic for e in curated.index(data)}
    assert first[item.id] == item.topic and second[item.id] == new_topic
    assert {k: v for k, v in second.items() if k != item.id} == {k: v for k, v in first.items() if k != item.id}
    path.write_text(text.replace(old, old + "\nid = 3", 1), encoding="utf-8")  # a key twice: not TOML
    curated._index.cache_clear()
    with pytest.raises(curated.CuratedError, match="seed000.toml.*not valid TOML"):
        curated.index(data)


def test_quiz_reads_the_curated_files_from_the_cache_the_second_time(cache):
    """No TOML parser imported on a warm start: the entries of the shipped files are there."""
    import subprocess
    import sys

    probe = ("import sys; from question_bank import curated; curated.index(None, skip_bad=True); "
             "print('tomllib' in sys.modules)")
    root = Path(__file__).resolve().parents[2]
    runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=root,
                           timeout=60).stdout.strip() for _ in range(2)]
    assert runs == ["True", "False"]
