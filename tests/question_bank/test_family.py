"""Registering a family (``question_bank.family.family``): what it declares about its MCQ view's slips
(``view_slips``) is checked when it registers, so a typo fails at import rather than as a view that crosses no
slip."""

from __future__ import annotations

import pytest

from question_bank.family import FAMILIES, Draw, Wrong, family, spelled

#: A mistake spelled in a module-level constant, as ``Wrong(*_SPARSE, ...)`` in the hardware families
_HALF = ("halved", "halved it", "It is not halved.")


def _helper_wrongs(x: float) -> list[Wrong]:
    """Mistakes made in a helper of the module, not in the build function itself."""
    return [Wrong("doubled", "doubled it", "It is not doubled.", 2 * x)]


def _build(d: Draw):
    x = d.rng.randint(2, 9)
    return [Wrong("gb_for_gib", "GB for GiB", "1 GiB = 2^30 bytes.", x * 1.07), Wrong(*_HALF, x / 2), *_helper_wrongs(x)]


def _register(fid: str, **kw):
    """Register ``_build`` as ``fid`` with ``kw`` (and take it out of the registry again)."""
    try:
        return family(fid, topic="test", title="a test family", types=("nat",), **kw)(_build)
    finally:
        FAMILIES.pop(fid, None)


def test_the_strings_a_build_function_spells_include_its_constants_and_helpers():
    """``spelled``: the ids of ``Wrong("id", ...)`` in the function, of a module-level tuple it unpacks and of a
    helper of its module it calls; not a string it never names."""
    got = spelled(_build)
    assert {"gb_for_gib", "halved", "doubled"} <= got
    assert "gb_for_gbi" not in got


def test_view_slips_are_stored_for_every_level_or_the_levels_named():
    every = _register("test.view_slips_every", view_slips=("gb_for_gib", "halved"))
    assert [every.slips_in_view(lv) for lv in every.levels] == [("gb_for_gib", "halved")] * 3
    one = _register("test.view_slips_hard", view_slips={"hard": ("doubled", "gb_for_gib")})
    assert one.slips_in_view("hard") == ("doubled", "gb_for_gib")
    assert one.slips_in_view("easy") == one.slips_in_view("medium") == ()  # the other levels cross every slip
    assert _register("test.view_slips_none").view_slips == ()


@pytest.mark.parametrize("slips", [("gb_for_gbi", "halved"), {"hard": ("gb_for_gib", "doubeld")}])
def test_a_view_slip_the_family_does_not_make_is_refused_when_it_registers(slips):
    """A typo in a declared slip (no ``Wrong`` of that id in the family's code) fails at registration, and the
    family is not registered."""
    with pytest.raises(ValueError, match="which is no mistake its code makes"):
        _register("test.view_slips_typo", view_slips=slips)
    assert "test.view_slips_typo" not in FAMILIES


@pytest.mark.parametrize("ids", [("gb_for_gbi",), ("halved", "doubeld")])
def test_a_told_apart_id_the_family_does_not_make_is_refused_when_it_registers(ids):
    """The same check for ``told_apart``: a typo would let a draw keep a mistake that gives its key."""
    with pytest.raises(ValueError, match="told_apart names .* which is no mistake its code makes"):
        _register("test.told_apart_typo", told_apart=ids)
    assert "test.told_apart_typo" not in FAMILIES
    with pytest.raises(TypeError, match="not a string"):
        _register("test.told_apart_str", told_apart="halved")
    assert _register("test.told_apart_ok", told_apart=("halved", "gb_for_gib")).told_apart == ("halved", "gb_for_gib")


@pytest.mark.parametrize(("slips", "error", "says"), [
    ({"herd": ("gb_for_gib",)}, ValueError, "level 'herd'"),
    ({"hard": ()}, ValueError, "no mistake at hard"),
    ("gb_for_gib", TypeError, "not a string"),
    ({"hard": "gb_for_gib"}, TypeError, "not a string"),
])
def test_a_malformed_view_slips_is_refused(slips, error, says):
    """An unknown level, a level with no slip, a bare string (which would be read letter by letter)."""
    with pytest.raises(error, match=says):
        _register("test.view_slips_bad", view_slips=slips)


def test_every_registered_declaration_names_ids_its_family_spells():
    """The real families' declarations passed the same check when they registered: each id is spelled in the
    family's code (that each is a slip its draws make is tests/question_bank/test_numeric_mcq.py's)."""
    from question_bank.family import all_families

    declared = {fid: f for fid, f in all_families().items() if f.view_slips or f.told_apart}
    assert any(f.view_slips for f in declared.values()) and any(f.told_apart for f in declared.values())
    for fid, f in declared.items():
        assert {i for _, ids in f.view_slips for i in ids} | set(f.told_apart) <= spelled(f.build), fid
