"""What a generated record (``handoff_core._records``) does beyond holding its fields, written by
hand: the record of the same name derives from the class here."""

from __future__ import annotations

from collections.abc import Sequence


class CheckReport:
    __slots__ = ()
    damage: Sequence[object]

    def is_clean(self) -> bool:
        """Whether the check found nothing damaged."""
        return not self.damage
