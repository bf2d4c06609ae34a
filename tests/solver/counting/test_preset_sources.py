"""Presets cite the seed texts by file name and section, never by a path on some machine."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from drills.cli import cli
from solver.counting.presets import PRESETS

SEED_PRESETS = [p for p in PRESETS.values() if p.name.startswith("seed")]


@pytest.mark.parametrize("preset", SEED_PRESETS, ids=lambda p: p.name)
def test_seed_presets_cite_file_name_and_section(preset):
    assert "/" not in preset.source, preset.source
    assert re.match(r"^00\d_[0-9a-f]{16}\.txt, \S", preset.source), preset.source


def test_models_show_prints_no_machine_path():
    r = CliRunner().invoke(cli, ["models", "show", "seed001-bert-tiny"])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "/work" not in flat
    assert "001_8ec5306c4a732c7b.txt, §8 configs['BERT-Tiny']" in flat
