"""Bad command-line input gets one clear line, never a traceback.

Each case is a command that works (checked once by ``test_templates_work``) with one argument
value replaced by garbage: a ragged matrix, letters, a huge or negative number, an unknown
preset or dtype, an empty string, unicode junk. Through click's CliRunner on ``drills.cli:cli``
the result must be

- exit status 2 with exactly one non-empty line on stderr, starting ``qkv: error:``; or
- exit status 1 only for a ``qkv check`` whose verdict is "wrong" (the garbage happened to be
  readable); or 0 when the garbage happened to be a valid value (rare: the generators aim at
  invalid ones, and the table in ``test_known_bad_inputs`` pins exit 2 for certain);

and never "Traceback" nor "internal error" anywhere in the output.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drills.cli import cli
from drills.cli.matrix_args import parse_number
from drills.output import InputError

# (command words, {option: a valid value}); the fuzzer replaces one option's value
TEMPLATES: list[tuple[list[str], dict[str, str]]] = [
    (["solve", "attention"], {"--q": "1 0; 0 1", "--k": "1 0; 0 1", "--v": "1 2; 3 4", "--mask": "1 1; 1 0",
                              "--scale": "1/2"}),
    (["solve", "attention"], {"--x": "1 0; 0 1", "--wq": "1 0; 0 1", "--wk": "1 0; 0 1", "--wv": "1 0; 0 1",
                              "--heads": "1"}),
    (["solve", "softmax"], {"--x": "1 2 3", "--temperature": "2"}),
    (["solve", "layernorm"], {"--x": "1 2 3", "--gamma": "1 1 1", "--beta": "0 0 0", "--eps": "1e-5"}),
    (["solve", "rmsnorm"], {"--x": "1 2; 3 4", "--gamma": "1 2", "--eps": "1e-6"}),
    (["solve", "pe"], {"--pos": "3", "--d-model": "4", "--dim": "1", "--base": "10000"}),
    (["solve", "rope"], {"--x": "1 0 0 1", "--pos": "2", "--base": "10000"}),
    (["solve", "params"], {"--preset": "gpt2", "--d-model": "768", "--n-heads": "12"}),
    (["solve", "params"], {"--d-model": "64", "--n-layers": "2", "--n-heads": "4", "--d-ff": "256",
                           "--vocab-size": "100", "--max-positions": "16"}),
    (["solve", "flops"], {"--preset": "gpt2", "--batch": "1", "--seq": "16"}),
    (["solve", "memory"], {"--preset": "gpt2", "--what": "kv-cache", "--batch": "1", "--seq": "16",
                           "--dtype": "bf16"}),
    (["solve", "matmul"], {"-B": "16", "-D": "1024", "-F": "1024", "--hw": "h100-sxm", "--dtype": "bf16"}),
    (["solve", "roofline"], {"--hw": "h100-sxm"}),
    (["solve", "decode"], {"-N": "7B", "-B": "1", "-S": "1024", "--hw": "h100-sxm",
                           "--kv-bytes-per-token": "512K"}),
    (["solve", "train"], {"-N": "7B", "-D": "1.4T"}),
    (["solve", "zero"], {"-N": "7.5B", "--gpus": "64", "--stage": "2"}),
    (["check", "attention"], {"--q": "1 0; 0 1", "--k": "1 0; 0 1", "--v": "1 2; 3 4", "--scores": "1 0; 0 1"}),
    (["check", "softmax"], {"--x": "1 2 3", "--output": "0.09 0.24 0.67"}),
    (["check", "layernorm"], {"--x": "1 2 3", "--mean": "2"}),
    (["check", "pe"], {"--pos": "1", "--d-model": "4", "--dim": "0", "--output": "0.8415"}),
    (["check", "rope"], {"--x": "1 0", "--pos": "1", "--output": "0.5403 0.8415"}),
    (["check", "params"], {"--preset": "bert-base", "--answer": "110M"}),
    (["check", "kv-cache"], {"--preset": "gpt2", "--batch": "1", "--seq": "16", "--dtype": "bf16",
                               "--answer": "1MB"}),
    (["models", "show"], {"": "gpt2"}),
    (["hw", "show"], {"": "h100-sxm"}),
    (["bank", "show"], {"": "attention.by_hand", "--seed": "1"}),
]

# values that no option here reads as valid (each is checked by the table test below)
JUNK = [
    "", " ", "1 2; 3", "[[1,2],[3]]", "[[1,2],[3,4]", "abc", "1,,2", "1e999999", "-5", "0", "-1e309",
    "NaN", "inf", "1/0", "☃", "１２", "\x00", "1 2 3; 4 5 6; 7 8", "[[[1]]]", ";", "1;;2", "99999999999999999999",
    "2^2000", "--", "nope-preset", "fp7", "½", "ⅷ", "1e", ".", "-", "1_0_", "0x10", "  ;  ",
]

_junk = st.one_of(
    st.sampled_from(JUNK),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.builds(lambda a, b: f"{a} {b}; {a}", st.integers(-9, 9), st.integers(-9, 9)),  # ragged
    st.integers(min_value=10**12, max_value=10**40).map(str),
    st.integers(max_value=-1).map(str),
)


def _run(args: list[str]):
    runner = CliRunner()
    return runner.invoke(cli, args, input="", catch_exceptions=True)


def _args(words: list[str], opts: dict[str, str]) -> list[str]:
    out = list(words)
    for k, v in opts.items():
        if k == "":
            out.append(v)
        else:
            out += [k, v]
    return out


def _assert_clean(args: list[str], result) -> None:
    out = (result.stdout or "") + (result.stderr or "")
    where = f"qkv {args!r} -> exit {result.exit_code}:\n{out}"
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{where}\n{result.exception!r}"
    assert "Traceback" not in out, where
    assert "internal error" not in out, where
    assert result.exit_code in (0, 1, 2), where
    if result.exit_code == 1:
        assert args[0] == "check", where  # only a checker says "wrong" with status 1
    if result.exit_code == 2:
        lines = [ln for ln in (result.stderr or "").splitlines() if ln.strip()]
        assert len(lines) == 1, where
        assert lines[0].startswith("qkv: error: "), where


@pytest.mark.parametrize("words,opts", TEMPLATES, ids=[" ".join(t[0]) + f"#{i}" for i, t in enumerate(TEMPLATES)])
def test_templates_work(words, opts):
    """The commands the fuzzer starts from are valid (so a failure below is the garbage's)."""
    args = _args(words, opts)
    result = _run(args)
    assert result.exit_code in (0, 1), f"{args}: {result.stdout}{result.stderr}"
    assert "Traceback" not in result.stdout + result.stderr


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_garbage_values_give_one_line(data):
    words, opts = data.draw(st.sampled_from(TEMPLATES), label="command")
    key = data.draw(st.sampled_from(sorted(opts)), label="option")
    bad = {**opts, key: data.draw(_junk, label="value")}
    args = _args(words, bad)
    _assert_clean(args, _run(args))


# certain failures: (args, a word the one-line message must contain)
KNOWN_BAD: list[tuple[list[str], str]] = [
    (["solve", "attention", "--q", "1 2; 3", "--k", "1 0", "--v", "1 0"], "--q"),
    (["solve", "attention", "--q", "1 0", "--k", "1 0; 0 1", "--v", "1 2 3"], "--v"),
    (["solve", "attention", "--q", "1 0", "--k", "1 0", "--v", "1 0", "--mask", "0"], "--mask"),
    (["solve", "attention", "--q", "a b", "--k", "1 0", "--v", "1 0"], "--q"),
    (["solve", "attention", "--q", "[[1,2],[3]]", "--k", "1 0", "--v", "1 0"], "--q"),
    (["solve", "attention", "--q", "1 0", "--k", "1 0", "--v", "1 0", "--scale", "1e999999"], "--scale"),
    (["solve", "softmax", "--x", ""], "--x"),
    (["solve", "softmax", "--x", "1 2", "--temperature", "0"], "temperature"),
    (["solve", "softmax", "--x", "1 2", "--temperature", "-1"], "temperature"),
    (["solve", "softmax", "--x", "☃"], "--x"),
    (["solve", "layernorm", "--x", "1 2 3", "--gamma", "1 1"], "--gamma"),
    (["solve", "layernorm", "--x", "1 2 3", "--eps", "-1"], "eps"),
    (["solve", "pe", "--pos", "x", "--d-model", "4"], "--pos"),
    (["solve", "pe", "--pos", "1", "--d-model", "4", "--dim", "9"], "dim"),
    (["solve", "pe", "--pos", "1", "--d-model", "-4"], "d-model"),
    (["solve", "rope", "--x", "1 2 3", "--pos", "1"], "--x"),
    (["solve", "params", "--preset", "nope"], "nope"),
    (["solve", "params", "--preset", "gpt2", "--d-model", "-1"], "d-model"),
    (["solve", "memory", "--preset", "gpt2", "--what", "kv-cache", "--batch", "1", "--seq", "4",
      "--dtype", "fp7"], "fp7"),
    (["solve", "matmul", "-B", "abc", "-D", "1", "-F", "1"], "abc"),
    (["solve", "matmul", "-B", "-5", "-D", "1", "-F", "1", "--hw", "h100-sxm"], "-B"),
    (["solve", "matmul", "-B", "1", "-D", "1", "-F", "1", "--hw", "tpu-v99"], "tpu-v99"),
    (["solve", "decode", "-N", "7B", "-B", "1", "-S", "1", "--hw", "h100-sxm", "--kv-bytes-per-token", "☃"],
     "kv-bytes"),
    (["solve", "attention", "--q", "1 0", "--k", "1 0", "--v", "1 0", "--scale", "-1e309"], "--scale"),
    (["solve", "attention", "--q", "1 0", "--k", "1 0", "--v", "1 0", "--scale", "1/sqrt(2)"], "exact"),
    (["solve", "softmax", "--x", "1 2GB"], "unit"),
    (["solve", "matmul", "-B", "1e400", "-D", "1", "-F", "1", "--hw", "h100-sxm"], "-B"),
    (["check", "attention", "--q", "1 0; 0 1", "--k", "1 0; 0 1", "--v", "1 2; 3 4"], "nothing to check"),
    (["check", "params", "--preset", "bert-base", "--answer", "lots"], "--answer"),
    (["check", "params", "--preset", "bert-base", "--answer", ""], "--answer"),
    (["models", "show", "gpt-17"], "gpt-17"),
    (["hw", "show", "h100-sxmm"], "h100-sxmm"),
    (["bank", "show", "no.such.family"], "no.such.family"),
    (["quiz", "--type", "essay", "--data-dir", "{tmp}"], "essay"),
    (["quiz", "--difficulty", "brutal", "--data-dir", "{tmp}"], "brutal"),
    (["quiz", "-n", "0", "--data-dir", "{tmp}"], "count"),
    (["quiz", "--topic", "no-such-topic", "--data-dir", "{tmp}"], "no-such-topic"),
    (["exam", "--minutes", "-3", "--data-dir", "{tmp}"], "minutes"),
    (["exam", "--topic", "no-such-topic", "--data-dir", "{tmp}"], "no-such-topic"),
]


@pytest.mark.parametrize("args,word", KNOWN_BAD, ids=[" ".join(a[:3]) + f"#{i}" for i, (a, _) in enumerate(KNOWN_BAD)])
def test_known_bad_inputs(args, word, tmp_path):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = _run(args)
    _assert_clean(args, result)
    assert result.exit_code == 2, f"{args}: exit {result.exit_code}\n{result.stdout}{result.stderr}"
    assert word.lower() in result.stderr.lower(), result.stderr


def test_no_traceback_with_every_junk_value_for_every_option():
    """Each JUNK value in each option of a few representative commands (deterministic sweep)."""
    for words, opts in TEMPLATES[:7] + TEMPLATES[16:18]:
        for key in opts:
            for junk in JUNK[:12]:
                args = _args(words, {**opts, key: junk})
                _assert_clean(args, _run(args))


@pytest.mark.parametrize("text,value", [
    ("3", Fraction(3)), ("-0.5", Fraction(-1, 2)), (".5", Fraction(1, 2)), ("1e-3", Fraction(1, 1000)),
    ("1/2", Fraction(1, 2)), ("-3/4", Fraction(-3, 4)), ("0.1", Fraction(1, 10)), ("2^-3", Fraction(1, 8)),
    ("1,048,576", Fraction(2**20)), ("1.5e2/3", Fraction(50)),
])
def test_command_line_numbers_use_the_answer_grammar_exactly(text, value):
    """matrix_args reads numbers with drills.answers' grammar and keeps them exact (0.1 is 1/10)."""
    assert parse_number(text, "--x") == value


@pytest.mark.parametrize("text,why", [
    ("abc", "not a number"), ("1/0", "division by zero"), ("1e999", "too large"), ("sqrt(2)", "exact"),
    ("4 GiB", "unit"), ("", "not a number"), ("1,5", "decimal comma"),
])
def test_command_line_numbers_refused(text, why):
    with pytest.raises(InputError) as e:
        parse_number(text, "--x")
    assert e.value.format_message().startswith("--x: ")
    assert why in e.value.format_message()


@pytest.mark.parametrize("words, expect", [
    (["solve", "kv-bytes"], "memory"),  # a guessed name: the command whose help names KV and bytes
    (["solve", "softmx"], "softmax"),  # a typo
    (["solver", "params"], "solve"),
    (["solve", "roofline-x"], "roofline"),
])
def test_an_unknown_command_names_the_ones_meant(words, expect):
    """``qkv solve kv-bytes`` (no such command: a KV cache's bytes are ``solve memory --what kv-cache``) says which
    commands the name may mean, in the one error line: those spelled alike, then those whose help names its words."""
    r = CliRunner().invoke(cli, words)
    line = [ln for ln in r.output.splitlines() if "No such command" in ln]  # click's runner: stdout and stderr
    assert r.exit_code == 2 and len(line) == 1 and "Did you mean" in line[0] and expect in line[0].split("Did you mean", 1)[1], line


def test_an_unknown_command_with_nothing_near_is_one_plain_line():
    r = CliRunner().invoke(cli, ["solve", "zzzzqq"])
    assert r.exit_code == 2 and "Did you mean" not in r.output and "Traceback" not in r.output


def test_solve_kv_cache_is_the_memory_command_for_a_kv_cache():
    """``qkv check kv-cache`` exists, so people type ``qkv solve kv-cache``: it answers as ``solve memory --what
    kv-cache`` does (the same output for the same flags), and ``qkv solve --help`` lists it."""
    flags = ["--preset", "llama-2-7b", "--seq", "4096", "--batch", "1", "--dtype", "bf16"]
    alias = CliRunner().invoke(cli, ["solve", "kv-cache", *flags])
    full = CliRunner().invoke(cli, ["solve", "memory", "--what", "kv-cache", *flags])
    assert alias.exit_code == full.exit_code == 0 and alias.output == full.output
    assert "2,147,483,648" in alias.output  # 2 × 32 layers × 4096 × 32 heads × 128 × 2 bytes, as Llama-2-7B's config
    assert "kv-cache" in CliRunner().invoke(cli, ["solve", "--help"]).output
