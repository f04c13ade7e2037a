#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The README's table of the CPU allocator's environment variables against
src/cpu/options.c, which reads them: the same names, each row's default and
range as the code has them, a description of one short line, and a longer
explanation of each in the design doc or the reference page it links
(a relative link to a `*-reference.md` file beside it).

    env_table.py README.md src/cpu/options.c docs/cpu-design.md

Exits 1 with one line per mismatch.  The range is written as the code
clamps it: `0, 1` for a flag, `0-N` for a number, `0 and up` where the
clamp is beyond any sensible value (2^32 or more)."""
import os
import re
import sys

SIZE_MAX = 2**64 - 1
UNBOUNDED = 2**32
MAX_DESCRIPTION = 160   # characters: one line of the rendered table


def options_from_code(text):
    """{name: (default, range)} from the initializer and _mm_options_init."""
    init = re.search(r"mm_options_t _mm_options = \{(.*?)\};", text, re.S)
    if not init:
        raise SystemExit("env_table.py: no _mm_options initializer in options.c")
    defaults = dict(re.findall(r"\.(\w+)\s*=\s*([^,\n]+),", init.group(1)))
    options = {}
    for kind, name, field, limit in re.findall(
            r'mm_option_(flag|number)\("(MANYMALLOC_\w+)",\s*_mm_options\.(\w+)(?:,\s*([^)]+))?\)', text):
        value = defaults.get(field)
        if value is None:
            raise SystemExit(f"env_table.py: {name} reads _mm_options.{field}, which has no default")
        if kind == "flag":
            options[name] = ({"true": "1", "false": "0"}[value.strip()], "0, 1")
        else:
            top = eval(limit.replace("SIZE_MAX", str(SIZE_MAX)).replace("/", "//"), {"__builtins__": {}})
            options[name] = (value.strip(), "0 and up" if top >= UNBOUNDED else f"0-{top}")
    return options


def rows_from_readme(text):
    """{name: (default, range, description)} from the first table after the
    CPU part's "### Environment variables" heading."""
    at = text.find("### Environment variables")
    if at < 0:
        raise SystemExit("env_table.py: no '### Environment variables' heading in the README")
    rows, in_table = {}, False
    for line in text[at:].splitlines()[1:]:
        if line.startswith("|"):
            in_table = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            name = re.fullmatch(r"`(MANYMALLOC_\w+)`", cells[0])
            if name:
                rows[name.group(1)] = tuple(cells[1:]) if len(cells) == 4 else None
        elif in_table:
            break
    return rows


def mismatches(code, readme, design):
    for name in sorted(set(code) - set(readme)):
        yield f"{name}: read by options.c, missing from the README's table"
    for name in sorted(set(readme) - set(code)):
        yield f"{name}: in the README's table, not read by options.c"
    for name in sorted(set(code) & set(readme)):
        row = readme[name]
        if row is None:
            yield f"{name}: the row needs four cells (variable | default | range | effect)"
            continue
        default, limits, description = row
        if default != code[name][0]:
            yield f"{name}: default {default!r} in the README, {code[name][0]!r} in options.c"
        if limits != code[name][1]:
            yield f"{name}: range {limits!r} in the README, {code[name][1]!r} in options.c"
        if len(description) > MAX_DESCRIPTION:
            yield f"{name}: a description of {len(description)} characters (at most {MAX_DESCRIPTION})"
        if not re.search(f"`{name}[`=]", design):
            yield f"{name}: not explained in the design doc or its reference page"


def explanations(design_path, read):
    """The design doc's text followed by that of each reference page it links."""
    design = read(design_path)
    linked = sorted(set(re.findall(r"\]\(([\w.-]+-reference\.md)(?:#[\w-]*)?\)", design)))
    folder = os.path.dirname(design_path)
    return "\n".join([design] + [read(os.path.join(folder, name)) for name in linked])


def main(readme_path, options_path, design_path):
    read = lambda path: open(path, encoding="utf-8").read()
    code = options_from_code(read(options_path))
    if not code:
        raise SystemExit("env_table.py: no mm_option_flag/mm_option_number call found in options.c")
    problems = list(mismatches(code, rows_from_readme(read(readme_path)), explanations(design_path, read)))
    for p in problems:
        print(p)
    print(f"env_table.py: {len(code)} variables, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    sys.exit(main(*sys.argv[1:]))
