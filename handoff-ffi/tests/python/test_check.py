"""`Store.check`: damage done to a store from outside (a record file emptied by hand) is named,
moved aside with `repair=True`, and the queue works again."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import hf, new


def test_check_names_an_emptied_record_and_repair_moves_it_aside(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    store = hf.Store.connect(f"files:{folder}")
    assert store.check() == hf.CheckReport(damage=[])
    emptied = store.create(new(goal="emptied by hand"))
    kept = store.create(new(goal="untouched"))
    (folder / "handoffs" / f"{emptied.id}.json").write_text("")
    # The queue does not read as empty: the damage is named.
    with pytest.raises(hf.HandoffError.Storage, match=f"{emptied.id}.json"):
        store.claim_next("b")

    for report in (store.check(), store.check(False), store.check(repair=False)):
        found = {d.what: d for d in report.damage}
        damage = found[f"handoffs/{emptied.id}.json"]
        assert isinstance(damage, hf.Damage) and damage.problem and damage.repaired is None

    repaired = {d.what: d for d in store.check(repair=True).damage}
    moved = repaired[f"handoffs/{emptied.id}.json"].repaired
    assert moved is not None and "quarantine/" in moved
    aside = [p.relative_to(folder).parts for p in (folder / "quarantine").rglob(f"{emptied.id}.json")]
    assert ("handoffs", f"{emptied.id}.json") in [parts[-2:] for parts in aside], aside
    assert store.check().damage == []
    claim = store.claim_next("b")
    assert claim is not None and claim.handoff.id == kept.id


def test_check_of_a_sound_store(store: hf.Store) -> None:
    # `repair` is a Bool in Swift and Kotlin, checked by their compilers; uniffi's generated
    # Python reads any value by its truth, so there is no wrong type to refuse here.
    store.create(new())
    assert store.check(repair=True) == hf.CheckReport(damage=[])
