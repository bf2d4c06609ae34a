"""The static family index (question_bank.family_index, issue 40): it says what the real registry
says, each family loads from the module it names, and the quiz lists the bank from it without
importing every family module."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from question_bank import family_index
from question_bank.family import all_families

ROOT = Path(__file__).resolve().parents[2]


def test_index_is_the_registry():
    """The generated file is what the registry gives now, order included; if not:
    ``python -m question_bank.family_index`` rewrites it."""
    fams = all_families()
    index = family_index.build_index(fams)
    assert list(index) == list(fams)
    assert family_index.FAMILY_INDEX == index, "stale: run `python -m question_bank.family_index`"
    assert family_index.DATA_FILE.read_text(encoding="utf-8") == family_index.render_index(index)


def test_index_check_sees_a_changed_family():
    """The check above can fail: a family whose tags, types or module change gives another index."""
    fams = dict(all_families())
    fid = "moe.decode_weight_bytes"
    base = family_index.build_index(fams)
    for change in ({"tags": (*fams[fid].tags, "new-tag")}, {"types": ("nat", "mcq")}, {"topic": "serving"}):
        changed = {**fams, fid: dataclasses.replace(fams[fid], **change)}
        assert family_index.build_index(changed) != base
    moved = {**fams, fid: dataclasses.replace(fams[fid], build=fams["attention.by_hand"].build)}
    assert family_index.build_index(moved)[fid][0] == "attention" != base[fid][0]
    assert base[fid + "_mcq"][5] == fid and base[fid + "_mcq"][0] == base[fid][0]


PROBE = """
import json, sys
from question_bank import family_index
from question_bank.family_index import FAMILY_INDEX, LazyFamilies, load_family
fams = LazyFamilies()
first = fams["moe.decode_weight_bytes_mcq"]
after_one = sorted(m for m in sys.modules if m.startswith("question_bank.families."))
fresh = {}
for fid in FAMILY_INDEX:  # in index order, each loaded through its own module
    fam = load_family(fid)
    fresh[fid] = [fam.id, fam.topic, list(fam.types), list(fam.difficulties), list(fam.tags)]
from question_bank.family import FAMILIES, all_families
order_before = list(FAMILIES)
fams_all = all_families()
print(json.dumps({"after_one": after_one, "fallbacks": family_index.FALLBACKS, "fresh": fresh,
                  "lazy_order_differs": order_before != list(FAMILY_INDEX), "order": list(fams_all),
                  "first_is_registered": first is fams_all["moe.decode_weight_bytes_mcq"]}))
"""


def test_each_family_loads_from_its_module_alone():
    """In a fresh interpreter: one family (a numeric-MCQ view) imports its own module only; every
    family of the index loads through the module it names (no fallback to the full registry) and
    is the family the registry has; ``all_families`` afterwards has every family, in the order of a
    plain import."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True,
                         cwd=ROOT)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["after_one"] == ["question_bank.families.counting_common", "question_bank.families.moe"]
    assert got["fallbacks"] == []
    fams = all_families()
    assert got["fresh"] == {fid: [f.id, f.topic, list(f.types), list(f.difficulties), list(f.tags)]
                            for fid, f in fams.items()}
    assert got["lazy_order_differs"]  # loading one by one registered the views early ...
    assert got["order"] == list(fams)  # ... and all_families put them back in place
    assert got["first_is_registered"]


STALE_PROBE = """
import json, sys
from question_bank import family_index
fid = "moe.decode_weight_bytes"
family_index.FAMILY_INDEX = {fid: ("zoo", *family_index.FAMILY_INDEX[fid][1:])}  # the wrong module
fam = family_index.load_family(fid)
print(json.dumps({"id": fam.id, "fallbacks": family_index.FALLBACKS,
                  "all": len([m for m in sys.modules if m.startswith("question_bank.families.")])}))
"""


def test_a_stale_entry_falls_back_to_the_full_registry():
    """A family its indexed module does not register is still found (every module imported), and
    the fallback is recorded: the probe above would see it."""
    out = subprocess.run([sys.executable, "-c", STALE_PROBE], capture_output=True, text=True, timeout=120,
                         check=True, cwd=ROOT)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["id"] == "moe.decode_weight_bytes"
    assert got["fallbacks"] == ["moe.decode_weight_bytes"]
    assert got["all"] >= 30


def test_quiz_lists_the_bank_from_the_index():
    """The quiz's candidates are those of the real registry, and its catalogue loads a family on
    first use only."""
    from drills.quiz.plan import Candidate, Catalogue

    cat = Catalogue.load()
    lazy = {c for c in cat.candidates() if c.kind == "family"}
    real = {Candidate("family", f.id, f.topic, tuple(f.types), tuple(f.difficulties), tuple(f.tags))
            for f in all_families().values() if f.difficulties}  # a family with no level on offer is no candidate
    assert lazy == real
    assert cat.families["attention.heads"] is all_families()["attention.heads"]
    assert set(cat.families) == set(all_families())


QUIZ_PROBE = """
import io, sys, tempfile
sys.argv = ["qkv", "quiz", "--seed", "1", "-n", "1", "--topic", "counting.kv_cache", "--plain", "--data-dir", tempfile.mkdtemp()]
sys.stdin = io.StringIO("quit\\n")
from drills.cli import main
try:
    main()
except SystemExit:
    pass
print("FAMILY_MODULES=" + ",".join(sorted(m for m in sys.modules if m.startswith("question_bank.families."))))
"""


def test_quiz_imports_only_the_family_modules_it_asks():
    out = subprocess.run([sys.executable, "-c", QUIZ_PROBE], capture_output=True, text=True, timeout=120,
                         check=True, cwd=ROOT).stdout
    assert "Question 1 of 1" in out
    mods = [m for m in out.strip().splitlines()[-1].split("=", 1)[1].split(",") if m]
    assert 1 <= len(mods) <= 3, mods  # the one family's module (and what it imports), not all 30
