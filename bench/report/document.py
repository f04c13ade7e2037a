# SPDX-License-Identifier: Apache-2.0
"""The layer every section of report.md shares: where a part's results are
and how report.md links its plots, what a section gives back, headings at
the depth asked for, and markdown tables."""
import os
from dataclasses import dataclass, field


@dataclass
class Part:
    """A part's folder, where its runs wrote and its plots go, seen from
    report.md (link: the folder relative to report.md's), and the depth of
    the part's heading."""
    folder: str
    link: str
    depth: int

    def path(self, name):
        """Where a file of the part is, to read or to draw into."""
        return os.path.join(self.folder, name)

    def image(self, alt, name):
        return f"![{alt}]({os.path.join(self.link, name)})"

    def heading(self, text, below=0):
        """A heading `below` levels under the part's own."""
        return "#" * (self.depth + below) + " " + text

    def under(self):
        """The same folder, one heading level down (a subsection's)."""
        return Part(self.folder, self.link, self.depth + 1)


@dataclass
class Section:
    """A part's share of report.md: its lines; the lines that judge the
    issues' figures (met or NOT met), which the generator prints; and the
    correctness checks that the runs recorded as failed, which make it exit 1."""
    lines: list
    checks: list = field(default_factory=list)
    failed: list = field(default_factory=list)


def table(header, rows, align=""):
    """A markdown table's lines; align: a letter a column, l or r (left by
    default)."""
    align = align.ljust(len(header), "l")
    out = ["| " + " | ".join(map(str, header)) + " |",
           "|" + "".join("---:|" if a == "r" else "---|" for a in align)]
    return out + ["| " + " | ".join(map(str, r)) + " |" for r in rows]


def met(ok):
    """The verdict on one of the issues' figures, as every section spells it."""
    return f"**{'met' if ok else 'NOT met'}**"
