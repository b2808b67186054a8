"""Values as a person writes them, for the report and the scorecard's sentences: no Python reprs.

`human(value)`: None -> "—", a list -> "none, light", a float -> 3 significant digits (an integer
valued float as the integer), everything else as str. `plain(text)`: LaTeX markup of the papers'
abstracts (\\textit{x}, \\emph{x}, \\textbf{x}, \\%, ~) as plain text.
"""

from __future__ import annotations

import re

DASH = "—"
_LATEX = re.compile(r"\\(?:textit|emph|textbf|textrm|texttt)\{([^{}]*)\}")


def human(value: object) -> str:
    """`value` as a reader expects it: "—" for None, "a, b" for a list, 3 significant digits."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if value != value:
            return "n/a"
        return f"{value:.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.3g}"
    if isinstance(value, (list, tuple, set)):
        return ", ".join(human(v) for v in value) if value else DASH
    if isinstance(value, dict):
        return ", ".join(f"{k}: {human(v)}" for k, v in value.items()) if value else DASH
    return plain(str(value))


def plain(text: str) -> str:
    """LaTeX markup as plain text: \\textit{data augmentation} -> data augmentation."""
    text = _LATEX.sub(r"\1", text)
    return text.replace("\\%", "%").replace("~", " ")
