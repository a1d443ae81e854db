#!/usr/bin/env python3
"""docs/architecture.md against the sources (ctest docs_architecture).

Usage: architecture_doc_test.py [REPO_ROOT]   (default: two folders above this script)

The layer table of docs/architecture.md, between "<!-- layers: begin" and "<!-- layers: end",
has one row per layer: | layer | what is in it | uses | status |. A layer's folders are
src/<layer>/ and include/tessera/<layer>/; the CUDA back end's are cuda/ and
include/tessera/cuda/. This check fails (exit 1, one line per problem) when

- a folder of src/ or include/tessera/, or cuda/, has no row, or a row names no folder;
- a layer's files include a header of another layer (#include "tessera/<layer>/...",
  "<layer>/...", or a relative path into another layer's folder) and "uses" does not list it;
- "uses" lists a layer whose headers that layer's files never include;
- an edge goes down the table (to a later row) and is not written "!layer" in "uses", or one
  written "!layer" goes up;
- a folder inside a layer's folders (src/array/kernels/) or a top-level folder of the
  repository (apps/, tests/, ...) or a header directly in include/tessera/ is not named in
  the page.

Standard library only.
"""
import os
import re
import subprocess
import sys

DOC = os.path.join("docs", "architecture.md")
BEGIN = "<!-- layers: begin"
END = "<!-- layers: end"
SOURCE_EXTENSIONS = (".hpp", ".h", ".hh", ".cpp", ".cc", ".cxx", ".cu", ".cuh", ".inc", ".ipp", ".tpp")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\n]+)[">]', re.M)


def rel(root, path):
    return os.path.relpath(os.path.normpath(path), root).replace(os.sep, "/")


def layer_of(relpath):
    """The layer whose folder holds relpath (a path relative to the root), or None."""
    parts = relpath.split("/")
    if parts[0] == "cuda" and len(parts) > 1:
        return "cuda"
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "tessera"] and len(parts) > 3:
        return parts[2]
    return None


def layer_folders(root):
    """{layer: [folder, ...]} for every folder of src/ and include/tessera/, and cuda/."""
    found = {}
    for base in ("src", os.path.join("include", "tessera")):
        top = os.path.join(root, base)
        if os.path.isdir(top):
            for name in sorted(os.listdir(top)):
                if os.path.isdir(os.path.join(top, name)) and not name.startswith((".", "__")):
                    found.setdefault(name, []).append(base.replace(os.sep, "/") + "/" + name + "/")
    if os.path.isdir(os.path.join(root, "cuda")):
        found.setdefault("cuda", []).append("cuda/")
    return found


def nested_folders(root, folders):
    """Folders inside the layer folders (src/array/kernels/), as paths ending in '/'."""
    out = []
    for folder in folders:
        for dirpath, dirnames, _ in os.walk(os.path.join(root, folder)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            for d in dirnames:
                out.append(rel(root, os.path.join(dirpath, d)) + "/")
    return out


def top_level_folders(root):
    """The repository's top-level folders: the tracked ones where git answers, else all but
    hidden and build folders."""
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                                timeout=60, check=True).stdout.splitlines()
        names = {line.split("/", 1)[0] for line in listed if "/" in line}
        if names:
            return sorted(n for n in names if not n.startswith(".") and os.path.isdir(os.path.join(root, n)))
    except (OSError, subprocess.SubprocessError):
        pass
    return sorted(n for n in os.listdir(root)
                  if os.path.isdir(os.path.join(root, n)) and not n.startswith((".", "build", "__")))


def resolve(root, including_dir, quote, target):
    """The file an #include names, searched as the build does: the including file's folder
    (quoted includes), then include/ and src/. None for system and third-party headers."""
    candidates = [os.path.join(including_dir, target)] if quote == '"' else []
    candidates += [os.path.join(root, "include", target), os.path.join(root, "src", target)]
    for c in candidates:
        if os.path.isfile(c):
            return rel(root, c)
    return None


def include_edges(root, folders):
    """{(from_layer, to_layer): 'file includes target'} for every include across layers."""
    edges = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                source = rel(root, path)
                src_layer = layer_of(source)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for quote, target in INCLUDE.findall(text):
                    found = resolve(root, dirpath, quote, target.strip())
                    dst_layer = layer_of(found) if found else None
                    if dst_layer and src_layer and dst_layer != src_layer:
                        edges.setdefault((src_layer, dst_layer), "%s includes %s" % (source, target.strip()))
    return edges


def cells(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip() for c in line.split("|")]


def parse_table(doc):
    """[(layer, {used layer: marked against the order}), ...] in row order, and problems."""
    problems = []
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < 0 or end < start:
        return [], ["%s: no layer table between '%s' and '%s'" % (DOC, BEGIN, END)]
    lines = [l for l in doc[start:end].splitlines()[1:] if l.strip().startswith("|")]
    if not lines:
        return [], ["%s: the layer table between the markers has no rows" % DOC]
    header = [c.lower() for c in cells(lines[0])]
    if "layer" not in header or "uses" not in header:
        return [], ["%s: the layer table's header needs columns 'layer' and 'uses', has %s" % (DOC, header)]
    i_layer, i_uses = header.index("layer"), header.index("uses")
    rows = []
    for line in lines[1:]:
        row = cells(line)
        if all(set(c) <= set("-: ") for c in row):
            continue  # the separator row
        if len(row) <= max(i_layer, i_uses):
            problems.append("%s: layer table row has too few columns: %s" % (DOC, line.strip()))
            continue
        layer = row[i_layer].strip("`/ ")
        uses_text = re.sub(r"\([^)]*\)", "", row[i_uses])  # "(and Arrow)" and other remarks
        uses = {}
        for item in uses_text.split(","):
            item = item.strip().strip("`").strip()
            if item in ("", "-"):
                continue
            against = item.startswith("!")
            uses[item.lstrip("!").strip("`/ ")] = against
        rows.append((layer, uses))
    return rows, problems


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    doc_path = os.path.join(root, DOC)
    try:
        with open(doc_path, encoding="utf-8") as f:
            doc = f.read()
    except OSError as e:
        print("%s: cannot read: %s" % (DOC, e))
        return 1

    rows, problems = parse_table(doc)
    order = {}
    for index, (layer, _) in enumerate(rows):
        if layer in order:
            problems.append("%s: layer '%s' has two rows in the layer table" % (DOC, layer))
        order.setdefault(layer, index)
    documented = {layer: uses for layer, uses in rows}

    folders = layer_folders(root)
    for layer in sorted(folders):
        if layer not in order:
            problems.append("missing folder: layer '%s' (%s) has no row in the layer table of %s"
                            % (layer, ", ".join(folders[layer]), DOC))
    for layer, _ in rows:
        if layer not in folders:
            problems.append("%s: the layer table's row '%s' names no folder (no src/%s/, include/tessera/%s/%s)"
                            % (DOC, layer, layer, layer, ", cuda/" if layer == "cuda" else ""))
        for used in documented[layer]:
            if used not in order:
                problems.append("%s: the '%s' row uses '%s', which has no row of its own" % (DOC, layer, used))

    all_folders = [f for fs in folders.values() for f in fs]
    for folder in nested_folders(root, all_folders):
        if folder not in doc:
            problems.append("missing folder: %s is not named in %s (write it as `%s`)" % (folder, DOC, folder))
    for name in top_level_folders(root):
        if "`%s/`" % name not in doc and "`%s/" % name not in doc:
            problems.append("missing folder: the top-level folder %s/ is not named in %s" % (name, DOC))
    top_headers = os.path.join(root, "include", "tessera")
    if os.path.isdir(top_headers):
        for name in sorted(os.listdir(top_headers)):
            if os.path.isfile(os.path.join(top_headers, name)) and "tessera/" + name not in doc:
                problems.append("missing header: include/tessera/%s is not named in %s" % (name, DOC))

    edges = include_edges(root, all_folders)
    for (a, b), example in sorted(edges.items()):
        if a not in documented or b not in order:
            continue  # already reported: a layer without a row
        if b not in documented[a]:
            problems.append("missing edge: %s -> %s (%s); add %s to the 'uses' of the %s row%s"
                            % (a, b, example, b, a,
                               ", written !%s: it goes down the table" % b if order[b] > order[a] else ""))
    for layer, uses in rows:
        for used, against in sorted(uses.items()):
            if used not in order:
                continue
            if (layer, used) not in edges:
                problems.append("edge not in the sources: %s -> %s is in the 'uses' of the %s row, but no file "
                                "of %s includes a header of %s; remove it" % (layer, used, layer, layer, used))
                continue
            down = order[used] > order[layer]
            if down and not against:
                problems.append("edge against the order: %s -> %s (%s) goes down the table; write it !%s "
                                "in the %s row (and say why in the page), or remove the include"
                                % (layer, used, edges[(layer, used)], used, layer))
            if against and not down:
                problems.append("%s: the %s row marks !%s as against the order, but %s is above %s; "
                                "write it %s" % (DOC, layer, used, used, layer, used))

    if problems:
        for p in problems:
            print(p)
        print("FAILED: %d problem(s); %s must name every layer folder and every layer edge (root %s)"
              % (len(problems), DOC, root))
        return 1
    print("OK: %s's layer table agrees with the sources: %d layers, %d layer edges"
          % (DOC, len(rows), len(edges)))
    for (a, b) in sorted(edges, key=lambda e: (order.get(e[0], 0), order.get(e[1], 0))):
        print("  %s -> %s" % (a, b))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
