"""`check`: damage done to a store from outside (a record file emptied by hand) is named, moved
aside with `repair=True`, and the queue works again; bad input is a `ValidationError`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import handoff_core as hc


def test_check_names_an_emptied_record_and_repair_moves_it_aside(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with hc.connect(f"files:{folder}") as store:
        assert store.check().is_clean()
        emptied = store.create("t", "emptied by hand")
        kept = store.create("t", "untouched")
        (folder / "handoffs" / f"{emptied.id}.json").write_text("")
        # The queue does not read as empty: the damage is named.
        with pytest.raises(hc.StorageError, match=f"{emptied.id}.json"):
            store.claim_next("b")

        report = store.check()
        assert isinstance(report, hc.CheckReport) and not report.is_clean()
        assert all(isinstance(d, hc.Damage) for d in report.damage)
        found = {d.what: d for d in report.damage}
        damage = found[f"handoffs/{emptied.id}.json"]
        assert damage.problem and damage.repaired is None
        assert damage.to_dict() == {"what": damage.what, "problem": damage.problem, "repaired": None}
        assert report.to_dict()["damage"][0]["what"] == report.damage[0].what
        assert repr(report).startswith("CheckReport(damage=[Damage(what=")

        repaired = {d.what: d for d in store.check(repair=True).damage}
        moved = repaired[f"handoffs/{emptied.id}.json"].repaired
        assert moved is not None and "quarantine/" in moved
        aside = [p.relative_to(folder).parts for p in (folder / "quarantine").rglob(f"{emptied.id}.json")]
        assert ("handoffs", f"{emptied.id}.json") in [parts[-2:] for parts in aside], aside
        assert store.check().is_clean()
        claim = store.claim_next("b")
        assert claim is not None and claim.handoff_id == kept.id


def test_check_of_a_sound_store_and_through_aio(tmp_path: Path) -> None:
    with hc.Store.memory() as memory, hc.open(tmp_path / "h.db") as sqlite:
        for store in (memory, sqlite):
            store.create("t", "sound")
            assert store.check().damage == [] and store.check(repair=True).is_clean()

    async def main() -> hc.CheckReport:
        async with await hc.aio.connect(f"files:{tmp_path / 'files'}") as store:
            await store.create("t", "sound")
            report = await store.check(repair=True)
        return report

    assert asyncio.run(main()).is_clean()


def test_check_refuses_bad_input_by_name() -> None:
    with hc.Store.memory() as store:
        with pytest.raises(hc.ValidationError) as caught:
            store.check(repair="yes")  # type: ignore[arg-type]
        assert caught.value.fields == ["repair"]
        with pytest.raises(TypeError):
            store.check(colour=1)  # type: ignore[call-arg]
