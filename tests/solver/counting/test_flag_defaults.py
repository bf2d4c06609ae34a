"""Issue 37: a model given by flags prints, with the plain answer, the structure it assumed that
changes the count; ``--like PRESET`` takes a preset's structure with the flags' sizes (Llama-2-7B's
sizes then give its published exact count, 6,738,415,616)."""

from __future__ import annotations

from click.testing import CliRunner

from drills.cli import cli

LLAMA2_7B_SIZES = ["--hidden-size", "4096", "--num-attention-heads", "32", "--num-hidden-layers", "32",
                   "--intermediate-size", "11008", "--vocab-size", "32000", "--max-position-embeddings", "4096"]


def test_flags_alone_print_what_they_assumed():
    r = CliRunner().invoke(cli, ["solve", "params", *LLAMA2_7B_SIZES])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "answer: 5,182,554,112 parameters"
    assert lines[1].startswith("  assumed (no flag set them; each changes the count): --ffn gelu, ")
    for part in ("--pos learned", "--bias true", "--tied-embeddings true", "--like PRESET"):
        assert part in lines[1]


def test_like_a_preset_gives_its_structure_with_the_flags_sizes():
    r = CliRunner().invoke(cli, ["solve", "params", "--like", "llama2-7b", *LLAMA2_7B_SIZES])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "answer: 6,738,415,616 parameters" and "assumed" not in r.stdout
    same = CliRunner().invoke(cli, ["solve", "params", "--preset", "llama2-7b"])
    assert same.stdout.splitlines()[0].startswith("answer: 6,738,415,616 parameters")
