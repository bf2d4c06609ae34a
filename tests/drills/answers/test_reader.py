"""The answer parser: accepted spellings, rejected inputs and their messages, fuzzing.

Expected values are worked out by hand in the tables (2^20 = 1,048,576; 4 GiB = 4·2^30 bytes;
537M = 537·10^6; 40% = 0.4 ...), never taken from the parser's own output.
"""

from __future__ import annotations

import ast
import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drills.answers import (
    AnswerParseError,
    Command,
    MatrixReader,
    parse_answer,
    parse_choice,
    parse_choice_or_text,
    parse_command,
    parse_for,
    parse_matrix,
    parse_number,
    parse_vector,
)

# text, value, exact (None: irrational), unit, dimension
ACCEPTED = [
    ("0.602", 0.602, Fraction(602, 1000), "", ""),
    (".602", 0.602, Fraction(602, 1000), "", ""),
    ("6.02e-1", 0.602, Fraction(602, 1000), "", ""),
    ("6.02E-1", 0.602, Fraction(602, 1000), "", ""),
    ("3/5", 0.6, Fraction(3, 5), "", ""),
    ("  3 / 5  ", 0.6, Fraction(3, 5), "", ""),
    ("2^20", 1048576.0, Fraction(1048576), "", ""),
    ("2**20", 1048576.0, Fraction(1048576), "", ""),
    ("2²⁰", 1048576.0, Fraction(1048576), "", ""),
    ("2^-1", 0.5, Fraction(1, 2), "", ""),
    ("10⁻³", 0.001, Fraction(1, 1000), "", ""),
    ("1,048,576", 1048576.0, Fraction(1048576), "", ""),
    ("1_048_576", 1048576.0, Fraction(1048576), "", ""),
    ("1.07e9", 1.07e9, Fraction(1070000000), "", ""),
    ("1e-3", 0.001, Fraction(1, 1000), "", ""),
    ("-0.25", -0.25, Fraction(-1, 4), "", ""),
    ("−0.25", -0.25, Fraction(-1, 4), "", ""),  # U+2212 minus
    ("-2^2", -4.0, Fraction(-4), "", ""),  # power binds tighter than the sign
    ("(-2)^2", 4.0, Fraction(4), "", ""),
    ("2^3^2", 512.0, Fraction(512), "", ""),  # right-associative: 2^(3^2)
    ("1 - 1/4", 0.75, Fraction(3, 4), "", ""),
    ("3 × 4 ÷ 6", 2.0, Fraction(2), "", ""),
    ("2·3", 6.0, Fraction(6), "", ""),
    ("537M", 537e6, Fraction(537_000_000), "", ""),
    ("537 M", 537e6, Fraction(537_000_000), "", ""),
    ("1.2G", 1.2e9, Fraction(1_200_000_000), "", ""),
    ("175B", 175e9, Fraction(175_000_000_000), "", ""),
    ("110M", 110e6, Fraction(110_000_000), "", ""),
    ("7k", 7000.0, Fraction(7000), "", ""),
    ("1.5T", 1.5e12, Fraction(1_500_000_000_000), "", ""),
    ("175 billion", 175e9, Fraction(175_000_000_000), "", ""),
    ("40%", 0.4, Fraction(2, 5), "%", ""),
    ("12.5 %", 0.125, Fraction(1, 8), "%", ""),
    ("4 GiB", 4 * 2**30, Fraction(4 * 2**30), "GiB", "bytes"),
    ("4GiB", 4 * 2**30, Fraction(4 * 2**30), "GiB", "bytes"),
    ("4 gib", 4 * 2**30, Fraction(4 * 2**30), "GiB", "bytes"),
    ("4.29 GB", 4.29e9, Fraction(4_290_000_000), "GB", "bytes"),
    ("512 MiB", 512 * 2**20, Fraction(512 * 2**20), "MiB", "bytes"),
    ("16 KB", 16000.0, Fraction(16000), "KB", "bytes"),
    # bits and bytes: an upper-case prefix with a lower-case b is bits; all lower case is bytes
    ("1 Gb", 1e9, Fraction(10**9), "Gbit", "bits"),
    ("1 Gib", 2.0**30, Fraction(2**30), "Gibit", "bits"),
    ("8 bits", 8.0, Fraction(8), "bits", "bits"),
    ("1 bit", 1.0, Fraction(1), "bits", "bits"),
    ("2 Gbit", 2e9, Fraction(2 * 10**9), "Gbit", "bits"),
    ("2 gbits", 2e9, Fraction(2 * 10**9), "Gbit", "bits"),
    ("3 kbit", 3000.0, Fraction(3000), "Kbit", "bits"),
    ("3 Kb", 3000.0, Fraction(3000), "Kbit", "bits"),
    ("5 Mb", 5e6, Fraction(5 * 10**6), "Mbit", "bits"),
    ("1 Tb", 1e12, Fraction(10**12), "Tbit", "bits"),
    ("2 Mibit", 2.0 * 2**20, Fraction(2 * 2**20), "Mibit", "bits"),
    ("1 gb", 1e9, Fraction(10**9), "GB", "bytes"),
    ("1 mb", 1e6, Fraction(10**6), "MB", "bytes"),
    ("3 kb", 3000.0, Fraction(3000), "KB", "bytes"),
    ("3 kB", 3000.0, Fraction(3000), "KB", "bytes"),
    ("1 gib", 2.0**30, Fraction(2**30), "GiB", "bytes"),
    ("2 byte", 2.0, Fraction(2), "bytes", "bytes"),
    ("2^20 bytes", 2.0**20, Fraction(2**20), "bytes", "bytes"),
    ("1.2G bytes", 1.2e9, Fraction(1_200_000_000), "bytes", "bytes"),
    ("3.2e20 FLOPs", 3.2e20, Fraction(320 * 10**18), "FLOPs", "FLOPs"),
    ("312 TFLOP/s", 312e12, Fraction(312 * 10**12), "TFLOP/s", "FLOP/s"),
    ("989 TFLOPS", 989e12, Fraction(989 * 10**12), "TFLOPs", "FLOPs"),
    ("2 ms", 0.002, Fraction(1, 500), "ms", "s"),
    ("1.5 h", 5400.0, Fraction(5400), "h", "s"),
    ("7B params", 7e9, Fraction(7_000_000_000), "", ""),
    ("sqrt(2)/2", math.sqrt(2) / 2, None, "", ""),
    ("-1/√2", -1 / math.sqrt(2), None, "", ""),
    ("1/√2", 1 / math.sqrt(2), None, "", ""),
    ("√(1/4)", 0.5, Fraction(1, 2), "", ""),  # a perfect square stays exact
    ("sqrt(64)", 8.0, Fraction(8), "", ""),
    ("2√2", 2 * math.sqrt(2), None, "", ""),
    ("2pi", 2 * math.pi, None, "", ""),
    ("π/4", math.pi / 4, None, "", ""),
    ("e^2/(1+e^2)", math.e**2 / (1 + math.e**2), None, "", ""),
    ("exp(1)/(exp(1)+exp(0))", math.e / (math.e + 1), None, "", ""),
    ("ln(2)", math.log(2), None, "", ""),
    ("log2(1024)", 10.0, None, "", ""),
    ("2^0.5", math.sqrt(2), None, "", ""),
    ("(1+2)(3)", 9.0, Fraction(9), "", ""),
]


@pytest.mark.parametrize("text,value,exact,unit,dimension", ACCEPTED)
def test_accepted_spellings(text, value, exact, unit, dimension):
    p = parse_number(text)
    assert p.value == pytest.approx(value, rel=1e-12, abs=0)
    assert p.exact == exact
    assert p.unit == unit
    assert p.dimension == dimension


# text, words the message must contain
REJECTED = [
    ("", "expected a number"),
    ("   ", "expected a number"),
    ("abc", "'abc' is not a number or function"),
    ("1,5", "commas group thousands"),
    ("1,0485", "commas group thousands"),
    ("1,048,576,1", "commas group thousands"),
    ("1 2", "unexpected '2'"),
    ("2 +", "ends too early"),
    ("(1+2", "bracket is not closed"),
    ("1+2)", "closing bracket has no opening"),
    ("1/0", "division by zero"),
    ("0^-1", "division by zero"),
    ("sqrt(-1)", "not a real number"),
    ("(-8)^(1/3)", "not a real number"),
    ("ln(0)", "needs a positive number"),
    ("sqrt 2", "write sqrt(...) with brackets"),
    ("9^9^9", "too large"),
    ("10^400", "too large"),
    ("1e999", "too large"),
    ("1e999999999999", "too large"),
    ("1e-400", "too small"),
    ("10^-400", "too small"),
    ("exp(1000)", "too large"),
    ("inf", "finite number"),
    ("nan", "finite number"),
    ("2e", "'e' is not a unit I know"),
    ("4 GB GB", "'GB' is not a unit I know"),
    ("4 parsecs", "'parsecs' is not a unit I know"),
    ("8 b", "'b' alone is ambiguous: write bits or bytes"),
    ("8 Gb Gb", "'Gb' is not a unit I know"),
    ("1M M", "not a unit I know"),
    ("1" * 250, "too long"),
    ("(" * 40 + "1" + ")" * 40, "too deeply nested"),
    ("-" * 60 + "1", "too deeply nested"),
    ("__import__('os').system('x')", "unexpected '_'"),
    ("1; 2", "unexpected ';'"),
]


@pytest.mark.parametrize("text,message", REJECTED)
def test_rejected_inputs(text, message):
    with pytest.raises(AnswerParseError) as err:
        parse_number(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert len(str(err.value)) < 140


def test_precision_as_typed():
    # 0.60: two decimals, two significant digits; 6.02e-1 = 0.602: three decimals
    assert (parse_number("0.60").decimals, parse_number("0.60").sig_digits) == (2, 2)
    assert (parse_number("6.02e-1").decimals, parse_number("6.02e-1").sig_digits) == (3, 3)
    assert (parse_number("1.07e9").decimals, parse_number("1.07e9").sig_digits) == (0, 3)
    assert parse_number("-0.5").decimals == 1
    assert parse_number("3/5").decimals is None  # an expression, not a typed decimal
    assert parse_number("537M").scale == "M" and parse_number("175B").scale == "B"
    assert parse_number("1.2G").scale == "B"  # G and B are both 10^9 for counts


def test_units_convert_and_say_which_was_typed():
    p = parse_number("4.29 GB")
    assert p.magnitude == 4.29 and p.unit == "GB"
    assert p.to("GiB") == pytest.approx(4.29e9 / 2**30)
    assert parse_number("1 GiB").to("GB") == pytest.approx(1.073741824)
    assert parse_number("4 GiB").to("bytes") == 4 * 2**30
    assert parse_number("2 ms").to("us") == pytest.approx(2000)
    assert parse_number("40%").magnitude == 40
    with pytest.raises(AnswerParseError, match="cannot express bytes in ms"):
        parse_number("4 GB").to("ms")
    with pytest.raises(AnswerParseError, match="a plain number"):
        parse_number("4").to("GiB")


def test_bits_are_a_dimension_of_their_own_convertible_by_eight():
    # 16 Gb = 16·10⁹ bits = 2·10⁹ bytes = 2 GB; 1 GB = 8·10⁹ bits = 8 Gbit; 8 bits = 1 byte
    assert parse_number("16 Gb").to("GB") == 2.0
    assert parse_number("1 GB").to("Gbit") == 8.0
    assert parse_number("8 bits").to("bytes") == 1.0
    assert parse_number("1 Gib").to("GiB") == 0.125
    assert parse_number("1 Gb").dimension != parse_number("1 GB").dimension
    with pytest.raises(AnswerParseError, match="cannot express bits in ms"):
        parse_number("1 Gb").to("ms")


def test_to_json_is_plain_data():
    j = parse_number("3/5").to_json()
    assert j["kind"] == "number" and j["exact"] == "3/5" and j["value"] == 0.6
    m = parse_matrix("1/2 1; 0 2").to_json()
    assert m["rows"] == [[0.5, 1.0], [0.0, 2.0]] and m["exact"][0][0] == "1/2"
    assert parse_choice("a,c", 4, True).to_json()["indices"] == [0, 2]


# -- matrices ------------------------------------------------------------------------------------

MATRICES = [
    ("0.6 0.4; 0.4 0.6", None, ((0.6, 0.4), (0.4, 0.6))),
    ("0.6, 0.4; 0.4, 0.6", None, ((0.6, 0.4), (0.4, 0.6))),
    ("0.6 0.4\n0.4 0.6", None, ((0.6, 0.4), (0.4, 0.6))),
    ("[[0.6,0.4],[0.4,0.6]]", (2, 2), ((0.6, 0.4), (0.4, 0.6))),
    ("[ [0.6, 0.4] , [0.4, 0.6] ]", None, ((0.6, 0.4), (0.4, 0.6))),
    ("[[1/2, 1/√4]]", (1, 2), ((0.5, 0.5),)),
    ("1 2 3 4 5 6", (2, 3), ((1.0, 2.0, 3.0), (4.0, 5.0, 6.0))),  # one line, read row by row
    ("-1/2 2^3; 1e-3 .5", None, ((-0.5, 8.0), (0.001, 0.5))),
]


@pytest.mark.parametrize("text,shape,rows", MATRICES)
def test_matrix_spellings(text, shape, rows):
    m = parse_matrix(text, shape)
    assert m.rows == rows
    assert m.shape == (len(rows), len(rows[0]))


@pytest.mark.parametrize("text,shape,message", [
    ("1 2; 3", None, "row 2 has 1 entries but row 1 has 2"),
    ("1 2; 3 4", (2, 3), "expected a 2×3 matrix (2 rows of 3), got 2×2"),
    ("1 x; 3 4", None, "row 1, entry 2"),
    ("1 2GB; 3 4", None, "no units"),
    ("[[1,2],[3,4]", None, "not closed"),
    ("[[[1]]]", None, "two deep"),
    ("[[1,2],3]", None, "mix of rows and numbers"),
    ("[1,,2]", None, "entry is missing"),
    ("1,,2", None, "missing between two commas"),
    ("", None, "expected a matrix"),
    ("1 " * 1100, None, "too many entries"),
])
def test_matrix_rejections(text, shape, message):
    with pytest.raises(AnswerParseError) as err:
        parse_matrix(text, shape)
    assert message in str(err.value)


def test_vectors():
    assert parse_vector("0.2 0.5 0.3").rows == ((0.2, 0.5, 0.3),)
    assert parse_vector("1, 2, 3").rows == ((1.0, 2.0, 3.0),)
    assert parse_vector("[1, 1/2]").rows == ((1.0, 0.5),)
    assert parse_vector("1; 2; 3").rows == ((1.0, 2.0, 3.0),)  # a column is read as the vector
    with pytest.raises(AnswerParseError, match="expected 3 entries, got 2"):
        parse_vector("1 2", length=3)
    with pytest.raises(AnswerParseError, match="expected a vector"):
        parse_vector("1 2; 3 4")


def test_matrix_reader_row_by_row():
    r = MatrixReader((2, 3))
    assert r.prompt() == "row 1 of 2"
    assert r.feed("1 2 3") is False
    with pytest.raises(AnswerParseError, match="expected 3 entries in this row, got 2"):
        r.feed("4 5")
    with pytest.raises(AnswerParseError, match="entry 2"):
        r.feed("4 oops 6")
    assert r.prompt() == "row 2 of 2"  # the bad rows were dropped, the first one kept
    assert r.feed("4, 5, 6") is True
    assert r.result().rows == ((1.0, 2.0, 3.0), (4.0, 5.0, 6.0))


def test_matrix_reader_names_an_unreadable_entry_before_the_row_length():
    """'abc' at a 3×2 prompt is not a number; saying "expected 2 entries, got 1" misleads."""
    r = MatrixReader((3, 2))
    with pytest.raises(AnswerParseError, match=r"entry 1 \('abc'\)"):
        r.feed("abc")
    with pytest.raises(AnswerParseError, match="expected 2 entries in this row, got 1"):
        r.feed("0.5")


def test_matrix_reader_blank_line_and_whole_matrix():
    r = MatrixReader()
    assert r.feed("1 0") is False and r.feed("0 1") is False and r.feed("1 1") is False
    assert r.feed("") is True
    assert r.result().rows == ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
    r = MatrixReader((2, 2))
    assert r.feed("[[1,2],[3,4]]") is True and r.result().rows == ((1.0, 2.0), (3.0, 4.0))
    r = MatrixReader((2, 2))
    assert r.feed("1 2; 3 4") is True
    r = MatrixReader()
    with pytest.raises(AnswerParseError, match="expected a row"):
        r.feed("")
    with pytest.raises(AnswerParseError, match="not complete"):
        r.result()


# -- options -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,indices", [
    ("b", {1}), ("B", {1}), ("2", {1}), ("(b)", {1}), ("b)", {1}), (" b. ", {1}), ("option b", {1}),
    ("d", {3}), ("4", {3}),
])
def test_mcq_spellings(text, indices):
    assert parse_choice(text, 4).indices == frozenset(indices)


_NUMERIC_OPTIONS = ["9.26 GB", "27.78 GB", "60.00 GB", "1985280 GB"]


@pytest.mark.parametrize("text,index", [
    ("60", 2), ("60.0", 2), ("60.00 GB", 2), ("60 gb", 2), ("1,985,280", 3), ("1985280", 3), ("27.78", 1),
    ("9.260", 0),
])
def test_numeric_option_typed_as_its_number(text, index):
    """A numeric MCQ's option typed as people write the number (no trailing zeros, thousands
    separators, the unit or not) is that option; another unit or another number is none."""
    assert parse_choice_or_text(text, 4, _NUMERIC_OPTIONS).indices == frozenset({index})


@pytest.mark.parametrize("text", ["60 GiB", "60.01", "27.8", "1,985,281"])
def test_numeric_option_other_number_or_unit_is_refused(text):
    with pytest.raises(AnswerParseError):
        parse_choice_or_text(text, 4, _NUMERIC_OPTIONS)


def test_numeric_option_that_is_also_a_letter_number_asks_for_the_letter():
    """"2" is option (b) by its number and the text of option (a) "2.00": refused, asking for the letter."""
    with pytest.raises(AnswerParseError, match="type the letter"):
        parse_choice_or_text("2", 4, ["2.00", "3.00", "5.00", "7.00"])


@pytest.mark.parametrize("text,indices", [
    ("a,c", {0, 2}), ("a c", {0, 2}), ("AC", {0, 2}), ("ac", {0, 2}), ("1,3", {0, 2}), ("1 3", {0, 2}),
    ("13", {0, 2}), ("(a)(c)", {0, 2}), ("a and c", {0, 2}), ("c, a", {0, 2}), ("a,a,c", {0, 2}),
    ("b", {1}), ("a,b,c,d", {0, 1, 2, 3}),
])
def test_msq_spellings(text, indices):
    p = parse_choice(text, 4, multiple=True)
    assert p.indices == frozenset(indices)


@pytest.mark.parametrize("text,multiple,message", [
    ("e", False, "there are 4 options (a-d or 1-4)"),
    ("5", True, "there are 4 options"),
    ("0", False, "expected one option (a-d or 1-4)"),
    ("ab", False, "choose one option"),
    ("a,c", False, "choose one option"),
    ("", True, "expected one or more options"),
    ("a-c", True, "expected one or more options"),
    ("0.5", False, "expected one option"),
    ("²", False, "expected one option"),
])
def test_choice_rejections(text, multiple, message):
    with pytest.raises(AnswerParseError) as err:
        parse_choice(text, 4, multiple)
    assert message in str(err.value)


def test_digits_run_together_only_with_few_options():
    assert parse_choice("12", 12, multiple=False).indices == frozenset({11})
    assert parse_choice("12", 12, multiple=True).indices == frozenset({11})
    assert parse_choice("12", 4, multiple=True).indices == frozenset({0, 1})


# -- commands ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,command", [
    ("hint", Command("hint")), (":h", Command("hint")), ("HINT", Command("hint")),
    ("skip", Command("skip")), ("next", Command("skip")), (":s", Command("skip")),
    ("solution", Command("solution")), ("show", Command("solution")), (":w", Command("solution")),
    ("another", Command("another")), (":a", Command("another")),
    ("quit", Command("quit")), ("exit", Command("quit")), (":q", Command("quit")),
    ("report", Command("report")), ("report the key should be 0.62", Command("report", "the key should be 0.62")),
    (":r dk is 4", Command("report", "dk is 4")), ("help", Command("help")), ("?", Command("help")),
    # answers, not commands
    ("b", None), ("a", None), ("q", None), ("h", None), ("0.6", None), ("a,c", None), ("show 3", None), ("", None),
])
def test_commands(text, command):
    assert parse_command(text) == command


def test_bare_shortcuts_only_where_letters_are_not_answers():
    assert parse_command("q") is None
    assert parse_command("q", letters_are_answers=False) == Command("quit")
    assert parse_command("a", letters_are_answers=False) == Command("another")
    assert parse_command("b", letters_are_answers=False) is None
    with pytest.raises(AnswerParseError, match="unknown command ':x'"):
        parse_command(":x")


# -- dispatch ------------------------------------------------------------------------------------

def test_parse_answer_dispatches_on_type():
    assert parse_answer("b", "mcq", n_options=4).indices == frozenset({1})
    assert parse_answer("a,c", "msq", n_options=4).indices == frozenset({0, 2})
    assert parse_answer("3/5", "nat").exact == Fraction(3, 5)
    assert parse_answer("110M", "integer").exact == 110_000_000
    assert parse_answer("1 0; 0 1", "matrix", shape=(2, 2)).rows == ((1.0, 0.0), (0.0, 1.0))
    with pytest.raises(ValueError):
        parse_answer("b", "mcq")


def test_parse_for_reads_a_problem():
    from question_bank.problem import ChoiceKey, MatrixKey, Problem

    def problem(type_, key, options=()):
        return Problem(id="x/1", family="x", seed=1, topic="attention", tags=(), difficulty="easy", marks=1,
                       type=type_, statement_md="", statement_text="", key=key, solution_md="",
                       solution_text="", options=list(options))

    matrix = problem("matrix", MatrixKey(value=((0.5, 0.5), (0.2, 0.8))))
    with pytest.raises(AnswerParseError, match="expected a 2×2 matrix"):
        parse_for(matrix, "1 2 3")
    assert parse_for(matrix, "0.5 0.5 0.2 0.8").rows == ((0.5, 0.5), (0.2, 0.8))
    mcq = problem("mcq", ChoiceKey(frozenset({2})), options=["1", "2", "3", "4", "5"])
    assert parse_for(mcq, "e").indices == frozenset({4})


# -- properties ----------------------------------------------------------------------------------

@given(st.integers(-10**12, 10**12), st.integers(1, 10**9))
def test_fractions_are_exact(a, b):
    assert parse_number(f"{a}/{b}").exact == Fraction(a, b)


@given(st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False)
       .filter(lambda x: x == 0 or abs(x) > 1e-290))
def test_float_repr_round_trips(x):
    assert parse_number(repr(x)).value == x


@given(st.integers(0, 10**15))
def test_thousands_separators(n):
    assert parse_number(f"{n:,}").exact == n
    assert parse_number(f"{n:_}").exact == n


@given(st.lists(st.lists(st.integers(-999, 999), min_size=3, max_size=3), min_size=1, max_size=4))
def test_matrix_round_trip(rows):
    text = "; ".join(" ".join(f"{v}/8" for v in row) for row in rows)
    assert parse_matrix(text).exact == tuple(tuple(Fraction(v, 8) for v in row) for row in rows)
    as_json = "[" + ",".join("[" + ",".join(f"{v}/8" for v in row) + "]" for row in rows) + "]"
    assert parse_matrix(as_json, (len(rows), 3)).exact == parse_matrix(text).exact


_ALPHABET = list("0123456789.,eE+-*/^()%√π×·÷−_ []; \n²⁰⁻abcdGiBKMTkmnstpql:?") + [
    "sqrt", "pi", "GiB", "Gb", "Gib", "bits", "kbit", "**", "1e308", "9^9", "bytes", "TFLOP/s", "log2(", "exp(", "hint", ":r", "[[", "]]"]
_PARSERS = [
    parse_number, parse_matrix, lambda t: parse_matrix(t, (2, 2)), parse_vector,
    lambda t: parse_choice(t, 4), lambda t: parse_choice(t, 4, True), lambda t: parse_choice(t, 12, True),
    parse_command, lambda t: parse_command(t, False),
]


def _only_parse_errors(text: str) -> None:
    for parse in _PARSERS:
        try:
            parse(text)
        except AnswerParseError as e:
            assert str(e) and "\n" not in str(e)


@given(st.text(max_size=300))
def test_arbitrary_text_raises_only_parse_errors(text):
    _only_parse_errors(text)


@given(st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join))
def test_answer_like_text_raises_only_parse_errors(text):
    _only_parse_errors(text)


def test_matrix_reader_fuzz_like_sequence():
    r = MatrixReader((2, 2))
    for line in ["", "x", "1", "1 2 3", "[[1]]", "1 2", "3 4"]:
        try:
            r.feed(line)
        except AnswerParseError:
            pass
    assert r.result().rows == ((1.0, 2.0), (3.0, 4.0))


@pytest.mark.parametrize("payload", [
    "__import__('os').system('touch {marker}')",
    "eval(\"open('{marker}','w')\")",
    "exec('open(\"{marker}\",\"w\")')",
    "[[__import__('os').system('touch {marker}')]]",
    "a; __import__('os').system('touch {marker}')",
])
def test_code_is_never_executed(tmp_path, payload):
    marker = tmp_path / "pwned"
    text = payload.format(marker=marker)
    for parse in _PARSERS:
        try:
            parse(text)
        except AnswerParseError:
            pass
    assert not marker.exists()


@pytest.mark.parametrize("source", sorted((Path(__file__).resolve().parents[3] / "drills" / "answers").glob("*.py")),
                         ids=lambda p: p.name)
def test_parser_source_has_no_eval_or_sympify(source):
    tree = ast.parse(source.read_text(encoding="utf-8"))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
              and not (n.attr == "compile" and isinstance(n.value, ast.Name) and n.value.id == "re")}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not names & {"eval", "exec", "compile", "__import__", "sympify", "parse_expr", "literal_eval"}
    assert not imported & {"sympy", "numpy", "torch", "ast", "json"}


def test_a_number_is_not_read_as_an_option_of_words_or_products():
    """The numeric reading is for options that are all values in one unit: "4" among "4 × 5"-style
    options, or "2" among "2 heads" and words, is the option number as before."""
    assert parse_choice_or_text("4", 4, ["2 × 3", "3 × 4", "5 × 2", "4 × 5"]).indices == frozenset({3})
    assert parse_choice_or_text("2", 4, ["2 heads", "one head", "8 heads", "no heads"]).indices == frozenset({1})


# Scientific notation as written by hand, "about", a closing full stop, units written out: each read as the
# plain literal it means (4.25 × 10^9 states three significant figures, as 4.25e9 does; it was an exact product).
_SUP = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


@given(st.integers(1, 99999), st.integers(0, 4), st.integers(-12, 15), st.sampled_from(["×", "x", "*", "·", " × ", " x "]),
       st.sampled_from(["^{}", "^({})", "**{}", "^{{{}}}", "sup"]), st.sampled_from(["", " bytes", " GB", " s"]))
def test_scientific_notation_as_written_by_hand_is_one_literal(digits, point, exp, times, power, unit):
    text = str(digits)
    mantissa = text if point == 0 or point >= len(text) else text[:-point] + "." + text[-point:]
    written_exp = str(exp).translate(_SUP) if power == "sup" else power.format(exp)
    written = f"{mantissa}{times}10{written_exp if power == 'sup' else written_exp}{unit}"
    p = parse_number(written)
    want = Fraction(mantissa) * Fraction(10) ** exp  # worked out here from the digits, not by the parser
    scale = {"": 1, " bytes": 1, " GB": 10**9, " s": 1}[unit]
    assert p.exact == want * scale, written
    assert p.sig_digits == len(mantissa.replace(".", "").lstrip("0")), written
    assert p.sig_digits == parse_number(f"{mantissa}e{exp}{unit}").sig_digits


@pytest.mark.parametrize("written, value, unit", [
    ("~4.25 GB", 4.25e9, "GB"), ("≈ 4.25 GB", 4.25e9, "GB"), ("4.25 GB.", 4.25e9, "GB"),
    ("4.25 gigabytes", 4.25e9, "GB"), ("1 kilobyte", 1e3, "KB"), ("3 gibibytes", 3 * 2**30, "GiB"),
    ("2 mebibytes", 2 * 2**20, "MiB"), ("12 milliseconds", 0.012, "ms"), ("3 microseconds", 3e-6, "us"),
    ("1.5 seconds", 1.5, "s"), ("2 hours", 7200, "h"), ("5 minutes", 300, "min"),
])
def test_numbers_as_people_write_them(written, value, unit):
    p = parse_number(written)
    assert p.value == pytest.approx(value, rel=1e-15) and p.unit == unit, (written, p)


@pytest.mark.parametrize("written", ["4.25 × 10", "1.5e9 x 2", "~", "4.25 GB..", "10^9 × 4.25"])
def test_what_is_not_one_number_in_scientific_notation_is_not_read_as_one(written):
    try:
        p = parse_number(written)
    except AnswerParseError:
        return
    assert p.sig_digits is None, (written, p)  # an expression, judged exactly
