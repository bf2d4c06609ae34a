"""Measure issue 39's adversary (question_bank.adversary.learned_attack) on every MCQ/MSQ family level
the bank offers, at 500 draws per level (seeds 0-499; each half scored by what the other half taught),
and record the figures as data: question_bank/data/choice_attack.json (with the commit and the date).

    nice -n 15 python bench/choice_attack.py [--draws 500] [--all-views] [FAMILY ...]
    nice -n 15 python bench/choice_attack.py --holdout [FAMILY ...]

A level that passes on seeds 0-499 is offered only when it passes on a fresh block of 500 draws too
(seeds from ``choice_record.HOLDOUT_FROM``, never used to tune a family): ``--holdout`` measures that
block for every level that passes on its own and has none of today's adversary.

Each level measured also gets ``bench/outside_attack.py``'s fixed-rule figure on the same draws
(``outside_rule``, part of the bank's gate; no scikit-learn needed) and, where its options are numbers,
its options-only learner's (``outside_options``; scikit-learn), so a level whose draws change never
keeps a figure of other draws; ``--outside FILE`` writes the figures of a full outside run instead.

Levels already in the file with the same draws (the digest of their first 20) and the same adversary digest are
kept (resumable); a level whose family changed since is measured again;
``--all-views`` also measures every level of every numeric family's MCQ view, listed or not.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "question_bank" / "data" / "choice_attack.json"
PART = None  # "--part I/N": the I-th of N interleaved shares of the levels, written to its own file


# the digests are question_bank.choice_record's (the bank and `--quality` read the record by them)
from question_bank.choice_record import adversary_digest, draws_digest  # noqa: E402,F401


def _quick(ps, margin: float = 0.10) -> tuple[float, float, bool] | None:
    """Key-pool memory alone, each half scored by the other, on a level whose options are numbers: its
    rate when it beats chance by more than 10 points (the level fails whatever the learners find)."""
    import numpy as np

    from question_bank import adversary as adv
    from question_bank.quality import printed_numbers

    if not all(printed_numbers(o) for p in ps for o in (p.options_text or p.options)):
        return None
    kind = ps[0].type
    k = max(len(p.key.correct) for p in ps)
    a, b = ps[0::2], ps[1::2]
    got = []
    for tr, te in ((a, b), (b, a)):
        score = adv._pool_scores(tr)
        got += [adv._choice_credit(kind, score(p), p.key.correct, k) for p in te]
    rate, chance = float(np.mean(got)), adv.choice_chance(ps)
    return (rate, chance, True) if rate > chance + margin else None


def measure(fam, level: str, draws: int, first: int = 0) -> dict:
    from question_bank import adversary as adv

    t0 = time.perf_counter()
    screen = min(200, draws)  # the first 200 draws screened by key-pool memory: a level it beats by 15 points fails there
    ps = [p for p in (fam.generate(s, level) for s in range(first, first + screen)) if p.type in ("mcq", "msq")]
    if len(ps) < screen // 2:
        raise ValueError(f"{len(ps)} of {screen} draws are choice items")
    quick = _quick(ps, 0.15)
    if quick is None:
        ps += [p for p in (fam.generate(s, level) for s in range(first + screen, first + draws)) if p.type in ("mcq", "msq")]
        quick = _quick(ps)
    else:
        draws = screen
    keys = {" | ".join(adv._key_texts(p)) for p in ps}
    if quick is not None:  # beaten by key-pool memory alone, by a wide margin: the learners are not needed
        rate, chance, numeric = quick
        return {"draws": draws, "chance": round(chance, 4), "best": round(rate, 4), "attacker": "key-pool memory",
                "attackers": {"key-pool memory": round(rate, 4)}, "unseen_key_rate": None, "unseen_key_n": 0,
                "unseen_rate": None, "unseen_n": 0, "numeric": numeric, "distinct_keys": len(keys),
                "first20": draws_digest(ps[:20]), "seconds": round(time.perf_counter() - t0, 1), "partial": True}
    L = adv.learned_attack(ps)
    return {"draws": draws, "chance": round(adv.choice_chance(ps), 4), "best": round(L.rate, 4), "attacker": L.model,
            "attackers": {k: round(v, 4) for k, v in L.attackers.items()},
            "unseen_key_rate": None if L.unseen_key_rate is None else round(L.unseen_key_rate, 4), "unseen_key_n": L.unseen_key_n,
            "unseen_rate": None if L.unseen_rate is None else round(L.unseen_rate, 4), "unseen_n": L.unseen_n,
            "numeric": L.numeric, "distinct_keys": len(keys), "first20": draws_digest(ps[:20]),
            "seconds": round(time.perf_counter() - t0, 1)}


def _same_draws(fam, level: str, rec: dict) -> bool:
    """Whether a record is of today's draws: its first 20 draws' digest (a family changed since is measured again)."""
    if "first20" not in rec:
        return True  # a level the view could not draw: nothing to compare
    ps: list = []
    seed = 0
    while len(ps) < 20 and seed < 200:  # the first 20 choice draws from seed 0, as measure() takes them
        p = fam.generate(seed, level)
        ps += [p] if p.type in ("mcq", "msq") else []
        seed += 1
    return draws_digest(ps) == rec["first20"]


def main(argv: list[str]) -> None:
    from question_bank import numeric_mcq as nm
    from question_bank.family import all_families

    draws = 500
    if "--draws" in argv:
        i = argv.index("--draws")
        draws = int(argv[i + 1])
        del argv[i:i + 2]
    out = OUT
    if "--part" in argv:
        i = argv.index("--part")
        part, nparts = map(int, argv[i + 1].split("/"))
        del argv[i:i + 2]
        out = OUT.with_suffix(f".part{part}.json")
    else:
        part, nparts = 0, 1
    all_views = "--all-views" in argv
    only = [a for a in argv if not a.startswith("--")]
    fams = all_families()
    todo = [(fid, lv) for fid, f in fams.items() if set(f.types) & {"mcq", "msq"} for lv in f.levels]
    if all_views:
        for fid in nm.candidates(fams):
            fams[fid + nm.SUFFIX + "*"] = nm.mcq_view(fams[fid])
            todo += [(fid + nm.SUFFIX + "*", lv) for lv in fams[fid].levels
                     if (fid + nm.SUFFIX, lv) not in todo]
    if only:
        todo = [(fid, lv) for fid, lv in todo if fid.rstrip("*") in only or fid in only]
    todo = todo[part::nparts]
    data = json.loads(out.read_text()) if out.exists() else {}
    dig = adversary_digest()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    levels = data.setdefault("levels", {})
    done = dict(json.loads(OUT.read_text())["levels"]) if OUT.exists() else {}
    for part_file in OUT.parent.glob(OUT.stem + ".part*.json"):
        done.update(json.loads(part_file.read_text())["levels"])
    holdout = "--holdout" in argv
    for fid, lv in todo:
        name = f"{fid.rstrip('*')}/{lv}"
        old = levels.get(name) or done.get(name)
        if holdout:  # the fresh block of a level that passes on its own (seeds from HOLDOUT_FROM)
            if not old or old.get("adversary") != dig or not _passes_block(old) or \
                    (old.get("holdout") or {}).get("adversary") == dig:
                continue
            h = measure(fams[fid], lv, draws, first=HOLDOUT_FROM)
            h.update(adversary=dig, commit=commit, date=datetime.date.today().isoformat())
            rec = {**old, "holdout": h}
            _clear_verdict(rec)
            rec.update(verdict(rec))
            levels[name] = rec
            data.update(draws=draws, adversary=dig)
            out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(f"{name} fresh draws: best {h['best']:.0%} ({h['attacker']}) chance {h['chance']:.0%} "
                  f"{'passes' if rec['passes'] else 'withdrawn'} {h['seconds']}s", flush=True)
            continue
        if old and old.get("draws") in (draws, 200) and old.get("adversary") == dig and \
                ("best" in old or "error" in old and "choice items" in old["error"]) and _same_draws(fams[fid], lv, old):
            continue
        try:
            rec = measure(fams[fid], lv, draws)
        except Exception as e:  # noqa: BLE001 - a level the view cannot draw is recorded as such
            rec = {"draws": draws, "error": f"{type(e).__name__}: {e}"[:200]}
        rec.update(adversary=dig, commit=commit, date=datetime.date.today().isoformat(), offered=not fid.endswith("*"))
        if "best" in rec and not fid.endswith("*"):  # the outside attacker's gating figures on the same draws
            rec.update(_outside_figures(fid, lv))
        rec.update(verdict(rec))  # a new figure on seeds 0-499: its fresh block is measured again (--holdout)
        levels[name] = rec
        data.update(draws=draws, adversary=dig)
        out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        if "best" in rec:
            print(f"{name}: best {rec['best']:.0%} ({rec['attacker']}) chance {rec['chance']:.0%} "
                  f"unseen-key {rec['unseen_key_rate']} keys {rec['distinct_keys']} {rec['seconds']}s", flush=True)
        else:
            print(name, rec["error"], flush=True)




def _outside_figures(fid: str, lv: str) -> dict:
    """bench/outside_attack.py's fixed rules (no scikit-learn needed) and, where the options are numbers and
    scikit-learn is installed, its options-only learner, on this level's draws as they are now: the figures
    ``choice_record.outside_beaten`` reads, with the draws' digest."""
    sys.path.insert(0, str(ROOT / "bench"))
    from outside_attack import outside_figures as measure_outside

    try:
        import sklearn  # noqa: F401
        learner = True
    except ImportError:
        print(f"  {fid}/{lv}: the options-only learner needs scikit-learn; its figure is not recorded", flush=True)
        learner = False
    rule, options = measure_outside(fid, lv, learner=learner)
    return {"outside_rule": rule, **({"outside_options": options} if options else {})}


def merge() -> dict:
    """The part files (``--part I/N``) merged into :data:`OUT`."""
    data = json.loads(OUT.read_text()) if OUT.exists() else {"levels": {}}
    for part in sorted(OUT.parent.glob(OUT.stem + ".part*.json")):
        d = json.loads(part.read_text())
        data["levels"].update(d["levels"])
        data.update(draws=d["draws"], adversary=d["adversary"])
        part.unlink()
    for rec in data["levels"].values():
        _clear_verdict(rec)
        rec.update(verdict(rec))
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


# the rule is question_bank.choice_record's (the bank offers a level by it); re-exported for the tests
from question_bank.choice_record import (  # noqa: E402,F401
    HOLDOUT_FROM,
    VERDICT_KEYS,
    _passes_block,
    gated,
    passes,
    passes_margin,
    verdict,
)


def summary() -> None:
    """The README's figures: per kind (numeric MCQ views, other MCQs, MSQs) the levels measured and
    passing, the median best figure, and every level that passes."""
    import statistics

    data = json.loads(OUT.read_text())
    rows = [(k, r) for k, r in sorted(data["levels"].items()) if "best" in r]
    print(f"adversary {data['adversary']}, {data['draws']} draws per level, {len(rows)} choice levels measured")
    for kind, sel in (("numeric MCQ views", lambda k: k.split("/")[0].endswith("_mcq")),
                      ("other MCQ/MSQ", lambda k: not k.split("/")[0].endswith("_mcq"))):
        rs = [(k, r) for k, r in rows if sel(k)]
        if not rs:
            continue
        ok = [k for k, r in rs if passes(r)]
        ex = [gated(r)[0] - r["chance"] for _, r in rs]
        print(f"{kind}: {len(ok)} of {len(rs)} levels pass; median excess over chance {statistics.median(ex):+.0%}, "
              f"max {max(ex):+.0%}")
        for k in ok:
            r = data["levels"][k]
            h = r["holdout"]
            print(f"  pass {k}: {gated(r)[0]:.0%} (chance {r['chance']:.0%}, {gated(r)[1]}); "
                  f"fresh draws {gated(h)[0]:.0%} (chance {h['chance']:.0%})")
        held = [k for k, r in rs if _passes_block(r) and not passes(r)]
        if held:
            print(f"  {len(held)} more pass on seeds 0-499 but not on fresh draws (or are not measured there): {', '.join(held)}")


def _clear_verdict(rec: dict) -> None:
    for k in VERDICT_KEYS[2:]:  # the optional fields; passes and gated are always written again
        rec.pop(k, None)


def reverdict() -> None:
    """Write each measured level's verdict (``passes``, ``gated``) again by today's rule, figures unchanged;
    drop the records of levels the bank no longer has (a view left out of ``NUMERIC_MCQ``)."""
    from question_bank.family import all_families

    fams = all_families()
    data = json.loads(OUT.read_text())
    for name in list(data["levels"]):
        fid, lv = name.rsplit("/", 1)
        if fid not in fams or lv not in fams[fid].levels:
            print(f"dropped {name}: no such level in the bank")
            del data["levels"][name]
    for rec in data["levels"].values():
        _clear_verdict(rec)
        rec.update(verdict(rec))
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def outside(paths: list[str]) -> None:
    """Write the outside attacker's rule verdict (bench/outside_attack.py) beside each level's figures: the fixed
    rule it chose on its training seeds, with that rule's validation and held-out rates (``outside_rule``, read by
    ``choice_record.outside_beaten``), and the verdicts again. ``--since REV`` vouches, for a file written before
    the attacker recorded its draws' digest, that the levels whose record is unchanged since REV drew the same."""
    since = None
    if "--since" in paths:
        i = paths.index("--since")
        since = json.loads(subprocess.run(["git", "show", f"{paths[i + 1]}:question_bank/data/choice_attack.json"],
                                          cwd=ROOT, capture_output=True, text=True, check=True).stdout)["levels"]
        paths = paths[:i] + paths[i + 2:]
    sys.path.insert(0, str(ROOT / "bench"))
    from outside_attack import options_verdict, rule_verdict

    data = json.loads(OUT.read_text())
    for path in paths:
        for name, res in json.loads(pathlib.Path(path).read_text())["levels"].items():
            rec = data["levels"].get(name)
            if rec is None or "best" not in rec:
                continue
            digest = res.get("first20")
            if digest is None and since is not None and since.get(name, {}).get("first20") == rec.get("first20"):
                digest = rec["first20"]
            if digest is None:
                print(f"  {name}: skipped (no digest of its draws; pass --since REV)")
                continue
            rec["outside_rule"] = rule_verdict(res, digest)
            opts = options_verdict(res, digest)
            if opts:
                rec["outside_options"] = opts
            else:
                rec.pop("outside_options", None)
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    reverdict()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--outside"]:
        outside(sys.argv[2:])
    elif sys.argv[1:2] == ["--merge"]:
        merge()
    elif sys.argv[1:2] == ["--verdicts"]:
        reverdict()
    elif sys.argv[1:2] == ["--summary"]:
        summary()
    else:
        main(sys.argv[1:])
