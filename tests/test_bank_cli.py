"""``qkv bank list|show|validate|errata`` through click's runner, and bank.py's lookups."""

import json

import pytest
from click.testing import CliRunner

from drills.bank_cmd import bank
from question_bank import bank as qb


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_list_json_fields(runner):
    r = runner.invoke(bank, ["list", "--json", "--kind", "family"])
    assert r.exit_code == 0, r.output
    obj = json.loads(r.output)
    assert obj["count"] == len(obj["items"]) >= 12
    for it in obj["items"]:
        assert {"id", "kind", "topic", "type", "source", "errata"} <= set(it)
        assert it["kind"] == "family" and it["errata"] == []


def test_list_topic_filter(runner):
    r = runner.invoke(bank, ["list", "--topic", "positional", "--kind", "family", "--json"])
    ids = [it["id"] for it in json.loads(r.output)["items"]]
    assert ids and all(i.startswith("positional.") for i in ids)


def test_show_text_and_json(runner):
    r = runner.invoke(bank, ["show", "attention.by_hand", "--seed", "3", "--difficulty", "hard"])
    assert r.exit_code == 0, r.output
    assert "Worked solution" in r.output and "(c)" in r.output and "attention.by_hand/hard/3" in r.output
    j = json.loads(runner.invoke(bank, ["show", "attention.by_hand/hard/3", "--json"]).output)
    assert j["id"] == "attention.by_hand/hard/3" and len(j["parts"]) in (3, 4) and j["parts"][-1]["follow_through"]
    assert j["key"]["kind"] == "matrix" and j["answer"]


def test_show_unknown_is_one_line(runner):
    r = runner.invoke(bank, ["show", "no.such.family"])
    assert r.exit_code == 2 and "no family or item" in r.output


def test_problem_ids_round_trip():
    p = qb.problem("softmax.temperature", seed=5, difficulty="hard")
    assert p.id == "softmax.temperature/hard/5"
    assert qb.problem(p.id).statement_md == p.statement_md


def test_validate_passes_and_reports_failures(runner, monkeypatch):
    from question_bank import family

    monkeypatch.setattr(qb, "curated", lambda: [])
    r = runner.invoke(bank, ["validate", "--seeds", "2"])
    assert r.exit_code == 0, r.output
    assert "ok:" in r.output
    # a broken family makes validate exit 1 and name it
    fam = family.FAMILIES["attention.heads"]
    orig = fam.build

    def broken(d):
        p = orig(d)
        p.misconceptions = [type(p.misconceptions[0])("bad", "bad", "bad", p.key.value)]
        return p

    object.__setattr__(fam, "build", broken)
    try:
        r = runner.invoke(bank, ["validate", "--seeds", "1"])
    finally:
        object.__setattr__(fam, "build", orig)
    assert r.exit_code == 1 and "attention.heads" in r.output and "accepted as correct" in r.output


def test_errata_json(runner):
    r = runner.invoke(bank, ["errata", "--json"])
    assert r.exit_code == 0, r.output
    obj = json.loads(r.output)
    assert obj["count"] == len(obj["errata"])
    for row in obj["errata"]:
        assert {"item", "where", "printed", "exact", "reason"} <= set(row)
