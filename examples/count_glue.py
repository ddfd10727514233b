"""Counts the lines a user writes to make a framework's handoff durable: the non-blank lines
between ``glue:start`` and ``glue:end`` markers (``#`` or ``//`` comments) of each example, and
fails when one is over its budget (issue #19's targets).

    python examples/count_glue.py examples/python/openai_agents_handoff.py=15 ...
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

MARKER = re.compile(r"^\s*(#|//)\s*glue:(start|end)\s*$")


def glue_lines(path: Path) -> int:
    count, inside = 0, False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        marker = MARKER.match(line)
        if marker:
            opening = marker.group(2) == "start"
            if opening == inside:
                raise SystemExit(f"{path}:{number}: glue:{marker.group(2)} without its pair")
            inside = opening
        elif inside and line.strip():
            count += 1
    if inside:
        raise SystemExit(f"{path}: glue:start never closed")
    return count


def main(arguments: list[str]) -> int:
    over = 0
    for argument in arguments:
        name, _, budget = argument.partition("=")
        lines = glue_lines(Path(name))
        verdict = "ok" if lines <= int(budget) else "OVER"
        over += verdict == "OVER"
        print(f"{name}: {lines} lines of glue (budget {budget}) {verdict}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
