"""Pre-registration kept by the machine (issue 85): every claim's code, definition, settings and seeds
are locked in config/registrations before the runs that judge it; a row that differs from its lock
is counted apart, and seeds that already have results cannot be registered again."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys

import pytest

from replikit.papers import paper_names, registry
from replikit.plan.bill import load
from replikit.scoring.registration import CHANGED, claim_code, fingerprint, read_lock, registered
from replikit.tools import register as reg

FAKE = '''
SCALE = {scale}


def helper(x):
    return x * SCALE


def claim_x1(runs, cfg):
    return helper(1)
'''


def _module(tmp_path, name: str, scale: int, text: str = FAKE):
    path = tmp_path / f"{name}.py"
    path.write_text(text.format(scale=scale))
    spec = importlib.util.spec_from_file_location(f"replikit._test_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_claims_code_hash_follows_the_helpers_and_constants_it_reaches(tmp_path):
    one, same, other = _module(tmp_path, "a", 2), _module(tmp_path, "b", 2), _module(tmp_path, "c", 3)
    assert claim_code(one.claim_x1) != claim_code(other.claim_x1)  # only a constant it reaches differs
    assert len(claim_code(same.claim_x1)) == 16


def test_a_docstring_or_comment_is_not_the_claims_code_but_a_statement_is(tmp_path):
    """The hash reads the syntax tree without docstrings and comments (registration.code_text)."""
    base = claim_code(_module(tmp_path, "d", 2).claim_x1)
    worded = FAKE.replace("def helper(x):\n", 'def helper(x):\n    """Scale x."""  # a note\n')
    assert claim_code(_module(tmp_path, "d", 2, worded).claim_x1) == base
    changed = FAKE.replace("return x * SCALE", "return x * SCALE + 1")
    assert claim_code(_module(tmp_path, "d", 2, changed).claim_x1) != base


def test_the_lock_covers_every_claim_at_smoke_and_default():
    for name in paper_names():
        paper, cfg = registry.get(name), load([])[name]
        lock = read_lock(name)
        for claim in paper.claims(paper.experiments(cfg), cfg):
            assert {"smoke", "default"} <= set(lock.get(claim.id, {})), f"{name} {claim.id} is not registered"


def _rows_and_prints(name: str = "super_consistency") -> tuple[list, dict, dict]:
    paper, cfg = registry.get(name), load([])[name]
    claims = paper.claims(paper.experiments(cfg), cfg)
    functions = dict(zip([c.id for c in claims], sys.modules[paper.claims.__module__].CLAIMS, strict=True))
    prints = {c.id: fingerprint(functions[c.id], c, cfg) for c in claims}
    rows = [{"id": c.id, "parts": [{}], "standing": "replication", "seeds": [0, 1, 2, 3, 4]} for c in claims]
    lock = {cid: {"default": {**fp, "seeds": [0, 1, 2, 3, 4]}} for cid, fp in prints.items()}
    return rows, prints, lock


def test_a_changed_statistic_margin_or_seed_set_moves_its_row_apart():
    rows, prints, lock = _rows_and_prints()
    assert [r["standing"] for r in registered(rows, prints, lock, "default")] == ["replication"] * len(rows)
    first = rows[0]["id"]
    paper, cfg = registry.get("super_consistency"), load([])["super_consistency"]
    claim = paper.claims(paper.experiments(cfg), cfg)[0]
    function = sys.modules[paper.claims.__module__].CLAIMS[0]
    restated = fingerprint(function, dataclasses.replace(claim, statistic="another statistic"), cfg)
    remargined = fingerprint(function, claim, {**cfg, "margins": {"range": 0.5}})
    for changed, what in ((restated, ["definition"]), (remargined, ["settings"])):
        out = registered(rows, {**prints, first: changed}, lock, "default")
        assert out[0]["standing"] == CHANGED and out[0]["registration"]["changed"] == what
        assert all(r["standing"] == "replication" for r in out[1:])
    fresh = [{**rows[0], "seeds": [20, 21, 22, 23, 24]}]
    assert registered(fresh, prints, lock, "default")[0]["registration"]["changed"] == ["seeds"]
    unregistered = registered(rows, prints, lock, "paper")[0]
    assert unregistered["standing"] == "replication" and unregistered["registration"]["changed"] == [
        "not registered"]


def test_register_refuses_seeds_that_already_have_results(tmp_path, monkeypatch):
    with pytest.raises(reg.RegistrationRefused, match="already have results .*fresh_seeds"):
        reg.register("super_consistency", [], "default", locks=tmp_path)
    done = reg.register("super_consistency", [], "default", initial=True, today="2026-12-07", locks=tmp_path)
    assert all(moved == ["not registered"] for moved in done.values())
    lock = read_lock("super_consistency", tmp_path)
    assert all(entry["default"]["after_results"] for entry in lock.values())
    again = reg.register("super_consistency", [], "default", locks=tmp_path)
    assert all(moved == [] for moved in again.values())
    monkeypatch.setattr(reg, "judged_seeds", lambda config, paper, cid: [90, 91, 92, 93, 94])
    with pytest.raises(reg.RegistrationRefused, match="not shopped for"):
        reg.register("super_consistency", ["SC-1"], "default", locks=tmp_path)
    # listed as judged on seen seeds only, an entry written after results may move to its first fresh set
    monkeypatch.setattr(reg, "seen_claims", lambda config, paper: ["SC-1"])
    assert reg.register("super_consistency", ["SC-1"], "default", locks=tmp_path)["SC-1"] == ["seeds"]
    entry = read_lock("super_consistency", tmp_path)["SC-1"]["default"]
    assert entry["seeds"] == [90, 91, 92, 93, 94] and not entry["after_results"]
    monkeypatch.setattr(reg, "judged_seeds", lambda config, paper, cid: [95, 96, 97, 98, 99])
    monkeypatch.setattr(reg, "seeds_with_results", lambda *a, **k: dict.fromkeys(range(90, 95), "a tree"))
    with pytest.raises(reg.RegistrationRefused, match="not shopped for"):  # its fresh set had results
        reg.register("super_consistency", ["SC-1"], "default", locks=tmp_path)
    monkeypatch.undo()
    real = reg.fingerprint
    monkeypatch.setattr(reg, "fingerprint", lambda f, c, cfg: {**real(f, c, cfg), "code": "changed"})
    with pytest.raises(reg.RegistrationRefused, match="changed: code"):
        reg.register("super_consistency", ["SC-1"], "default", initial=True, locks=tmp_path)
