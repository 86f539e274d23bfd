#!/usr/bin/env python3
"""The rooms of core/src stand on the ones below them and never include one above
(docs/ARCHITECTURE.md). Fails, printing file:line and the rule, when a file in core/src/<room>/
includes a header of a room above its own, or of another room on its own level; exits 77
(skipped) while core/src is not split into rooms yet. Usage: layering.py [core/src]"""
import os
import re
import sys

# The one table: rooms from the top down; rooms on one line are peers and do not include each other.
LEVELS = [
    ["cli", "api"],
    ["batch"],
    ["run"],
    ["stream"],
    ["exec"],
    ["io", "plan"],
    ["gpu"],
    ["base"],
]

# Includes that break the rule today, each waiting for the fix named (issue 28): printed on every
# run; one that no longer occurs fails the check until it is taken out of this list.
KNOWN = {
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")


def level_of():
    return {room: depth for depth, rooms in enumerate(LEVELS) for room in rooms}


def room_of_path(path, src):
    rel = os.path.relpath(os.path.normpath(path), src)
    head = rel.split(os.sep)[0]
    return head if head in level_of() and os.sep in rel else None


def included_room(target, here, src):
    """The room of the file an include names, searched as the compiler does: beside the file,
    then from core/src (the include root); None for headers outside the rooms."""
    for base in (here, src):
        candidate = os.path.join(base, target)
        if os.path.isfile(candidate):
            return room_of_path(candidate, src), os.path.relpath(os.path.normpath(candidate), src)
    return None, None


def check(src):
    level = level_of()
    problems, seen_known = [], set()
    for room in level:
        d = os.path.join(src, room)
        if not os.path.isdir(d):
            continue
        for dirpath, _, names in os.walk(d):
            for name in sorted(names):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, src)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        other, target = included_room(m.group(1), dirpath, src)
                        if other is None or other == room or level[other] > level[room]:
                            continue
                        if (rel, target) in KNOWN:
                            seen_known.add((rel, target))
                            print(f"known: {src}/{rel}:{lineno}: {room}/ includes {other}/ ({target}): "
                                  f"{KNOWN[(rel, target)]}")
                            continue
                        how = "a room above it" if level[other] < level[room] else "a peer room"
                        problems.append(f"{src}/{rel}:{lineno}: {room}/ includes {target}, {how}: "
                                        f"{room}/ may include only {', '.join(below(room))}")
    for pair in sorted(set(KNOWN) - seen_known):
        problems.append(f"layering.py: KNOWN lists {pair[0]} including {pair[1]}, which no longer "
                        "happens: take it out of KNOWN")
    return problems


def below(room):
    level = level_of()
    rooms = [r for r, d in sorted(level.items(), key=lambda kv: kv[1]) if d > level[room]]
    return [room + "/"] + [r + "/" for r in rooms]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "core", "src")
    src = os.path.normpath(src)
    if not os.path.isdir(os.path.join(src, "base")):
        print(f"skipped: {src} is not split into rooms yet (no core/src/base/: the files have not been moved into their rooms)")
        return 77
    flat = sorted(n for n in os.listdir(src) if os.path.isfile(os.path.join(src, n)) and n.endswith(SOURCE_EXT))
    problems = [f"{src}/{n}: in no room: every core file lives in one of core/src/<room>/" for n in flat]
    problems += check(src)
    for p in problems:
        print(p)
    order = " over ".join(" and ".join(r + "/" for r in rooms) for rooms in LEVELS)
    print(f"layering: {len(problems)} problem(s); the order: {order}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
