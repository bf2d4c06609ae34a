"""``qkv bank list|show|validate|errata`` through click's runner, and bank.py's lookups."""

import json

import pytest
from click.testing import CliRunner

from drills.cli.bank import bank
from question_bank import bank as qb


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_list_json_fields(runner):
    """Issue 4: ``--json`` prints a list of objects with id, kind, topic, type, source, errata;
    a family's source is "generated"."""
    r = runner.invoke(bank, ["list", "--json", "--kind", "family"])
    assert r.exit_code == 0, r.output
    items = json.loads(r.output)
    assert isinstance(items, list) and len(items) >= 30
    for it in items:
        assert {"id", "kind", "topic", "type", "source", "errata"} <= set(it)
        assert it["kind"] == "family" and it["errata"] == [] and it["source"] == "generated"


def test_list_json_is_a_list_of_families_and_curated_items(runner):
    r = runner.invoke(bank, ["list", "--json"])
    assert r.exit_code == 0, r.output
    items = json.loads(r.output)
    assert isinstance(items, list)
    assert {it["kind"] for it in items} == {"family", "curated"}
    assert len({it["id"] for it in items}) == len(items)
    for it in items:
        assert isinstance(it["errata"], list), it["id"]
        assert set(it["type"].split("|")) <= {"mcq", "msq", "nat", "integer", "matrix"}, it["id"]


def test_list_topic_filter(runner):
    r = runner.invoke(bank, ["list", "--topic", "positional", "--kind", "family", "--json"])
    items = json.loads(r.output)
    assert items and all(it["topic"] == "positional" for it in items)  # rope.context_extension is positional too
    assert "positional.pe_value" in {it["id"] for it in items}


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
    """The command's verdict and exit status, on a few families (the whole bank is
    tests/question_bank/quality/test_validate_many.py's)."""
    from question_bank import family

    monkeypatch.setattr(qb, "curated", lambda: [])
    few = {fid: f for fid, f in qb.families().items()
           if fid in ("attention.heads", "counting.kv_cache", "counting.kv_cache_mcq", "msq.mask_attend")}
    assert len(few) == 4
    monkeypatch.setattr(qb, "families", lambda: few)
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


def test_validate_merges_its_first_seed_and_the_rest(runner, monkeypatch):
    """Issue 40: validate runs the first seed of every family, the second (to estimate the rest), then the
    rest: the report counts them all, as one run of all the seeds would."""
    monkeypatch.setattr(qb, "curated", lambda: [])
    few = {fid: f for fid, f in qb.families().items() if fid in ("attention.heads", "msq.mask_attend")}
    monkeypatch.setattr(qb, "families", lambda: few)
    levels = sum(len(f.levels) for f in few.values())
    for n in (1, 2, 4):
        r = runner.invoke(bank, ["validate", "--seeds", str(n), "--json"])
        out = json.loads(r.output)
        assert r.exit_code == 0 and out["ok"] and out["generated"] == n * levels and out["families"] == 2
        assert out == {**qb.validate(seeds=n).to_json(), "ok": True}


def test_validate_estimates_the_whole_run_from_the_second_seed():
    from drills.cli.bank import estimate_line

    line = estimate_line(166, 429, 300, 12.0, 1.8)
    assert line.startswith("validating 166 families at 429 levels × 300 seeds (128,700 problems) and the curated items:")
    assert "about 9 min in all on this machine, 9 min left (at the pace of the second seed of every family, 2 s a seed)" \
        in line
    assert "about 37 s in all" in estimate_line(166, 429, 15, 12.0, 1.8)  # 12 + 13 × 1.8 + 1.5


def test_errata_json(runner):
    r = runner.invoke(bank, ["errata", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert isinstance(rows, list) and len(rows) >= 20
    for row in rows:
        assert {"item", "where", "printed", "exact", "reason"} <= set(row)
        assert row["where"].startswith(row["item"][:3] + "_") and row["printed"] != row["exact"]


# --------------------------------------------------------------------------- a cheap index, keys on demand


def test_listing_imports_neither_sympy_nor_numpy():
    """``qkv bank list``, ``qkv exam`` and ``qkv quiz`` start from ``entries()``: reading the
    data files must not compute a key (which pulls in SymPy/NumPy and takes seconds)."""
    import subprocess
    import sys

    code = ("import sys, question_bank.bank as b; es = b.entries(); "
            "n = sum(e.kind == 'curated' for e in es); assert n >= 80, n; "
            "print(sorted(m for m in ('numpy', 'sympy', 'torch') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout


def test_entries_compute_nothing_and_problem_builds_one_item(monkeypatch):
    """With fresh caches, listing runs no computation; ``problem(id)`` runs only that item's
    computations (its answer and its printed figures), and a second call runs none."""
    from question_bank import compute
    from question_bank import curated as cur

    calls: list[str] = []
    real_run = compute.run

    def counting_run(spec):
        calls.append(spec["compute"])
        return real_run(spec)

    monkeypatch.setattr(compute, "run", counting_run)
    monkeypatch.setattr(cur, "_BUILT", {})
    cur._index.cache_clear()
    es = qb.entries(kind="curated")
    assert len(es) >= 80 and calls == []
    item = next(it.item for it in cur.index() if it.id == "004.ex.b3")
    expected = 1 + sum("compute" in pr for pr in item.get("printed", []))
    p = qb.problem("004.ex.b3")
    assert p.id == "004.ex.b3" and calls == ["params"] * expected
    assert qb.problem("004.ex.b3") is p and len(calls) == expected


def test_curated_entries_match_the_built_problems():
    """Every field a listing shows, read from the TOML alone, equals the built problem's; the
    errata the file declares are exactly the built errata (minus the exact figure)."""
    built = {p.id: p for p in qb.curated()}
    es = qb.entries(kind="curated", include_study_only=True)
    assert {e.id for e in es} == set(built)
    for e in es:
        p = built[e.id]
        assert (e.topic, e.types, e.difficulties, e.source_label, e.tags) == \
            (p.topic, (p.type,), (p.difficulty,), p.source_label, p.tags), e.id
        seed_file = p.source.split()[0]
        assert e.source == f"{seed_file} {p.source_label}" and p.source == f"{seed_file} {e.section}", e.id
        assert list(e.errata) == [{"where": x.where, "printed": x.printed, "reason": x.reason, "kind": x.kind} for x in p.errata], e.id


def test_list_json_curated_errata(runner):
    r = runner.invoke(bank, ["list", "--json", "--kind", "curated"])
    assert r.exit_code == 0, r.output
    items = {it["id"]: it for it in json.loads(r.output)}
    b5 = items["004.ex.b5"]
    assert b5["kind"] == "curated" and b5["source_label"] == "B5" and b5["source"] == "004_83489721195aedaa.txt B5"
    assert b5["section"].startswith("§22")
    assert items["004.gate.q3"]["source"] == "004_83489721195aedaa.txt GATE Q3"
    assert all(it["errata"] == [] for it in items.values() if it["id"].startswith("004.gate.q4"))
    assert any("537M" in e["printed"] and e["reason"] for e in b5["errata"])


def test_unknown_curated_like_id_suggests_close_ids():
    with pytest.raises(qb.BankError, match="did you mean .*004.ex.b3"):
        qb.problem("ex.b3")


def test_show_prints_the_question_of_every_part(runner):
    """A multi-part item's questions live in its parts: `bank show` prints each part's prompt."""
    p = qb.problem("004.lab.bonus3_gqa")
    res = runner.invoke(bank, ["show", "004.lab.bonus3_gqa"])
    assert res.exit_code == 0
    for part in p.parts:
        assert f"({part.label}) {part.prompt_text}" in res.output


def test_quality_counts_the_families_each_type_draws_from():
    """Issue 26: `validate --quality` says how many families draw each type, numeric MCQs apart."""
    from drills.cli.bank import families_by_type
    from question_bank import quality
    from question_bank.numeric_mcq import NUMERIC_MCQ, SUFFIX

    base = next(iter(NUMERIC_MCQ))  # a listed view's base family (NAT or integer)
    rep = quality.run_quality(20, families=[base, base + SUFFIX, "msq.mask_attend"], include_curated=False, withdrawn=True)
    by = families_by_type(rep)
    assert (by["mcq"], by["numeric-mcq"], by["msq"], by["nat"] + by["integer"]) == (1, 1, 1, 1)


def test_no_worked_solution_starts_with_a_blank_line(runner):
    """Issue-24 families with no solver steps (flash.tiling_hbm, paged.kv_blocks, ...) printed three
    blank lines under "Worked solution:": an empty bullet list was a paragraph of its own. Every
    family at every difficulty, and every curated item: the solution (Markdown and text) and what
    ``qkv bank show`` prints start with their first line of content."""
    from drills.cli.bank import _render

    problems = [qb.problem(fid, seed=0, difficulty=diff)
                for fid, f in qb.families().items() for diff in f.levels] + qb.curated()
    bad = []
    for p in problems:
        shown = _render(p).split("\nWorked solution:\n\n", 1)[1]
        if not all(s.split("\n", 1)[0].strip() for s in (shown, p.solution_text, p.solution_md)):
            bad.append(p.id)
    assert bad == []
    r = runner.invoke(bank, ["show", "flash.tiling_hbm"])
    assert "Worked solution:\n\nB_c = " in r.output, r.output
