"""Every command, target, option and path that README.md and docs/*.md show exists.

Commands come from fenced code blocks and inline code spans: `make <target>` against the Makefile's targets,
`python -m nodedp <verb>` / `nodedp <verb>` and their options against `nodedp.cli.build_parser()`,
`python benchmarks/<x>.py` and its options against the script's `--help`, `snakemake ... <target>` against the
workflow's rules and output patterns (read once, by parsing the workflow). Relative links (with their anchors)
and repository paths named in inline code must exist. docs/design/ is left out, except from the last check: every
module of the package named (`nodedp.x.y`, `src/nodedp/x/y.py`) in README.md and docs/**/*.md, and every file the
layout in docs/workflow.md gives, exists. Each checker takes the repository root, so the last tests run them on a
copy with a typo put in.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
COMMAND_WORDS = ("make", "python", "python3", "nodedp", "snakemake")
# First components of paths that the repository itself holds (generated folders such as paper/ are not).
TRACKED_ROOTS = ("src", "tests", "benchmarks", "workflow", "docs", "slurm", "profiles", "envs")
TRACKED_FILES = ("Snakefile", "config.yaml", "Makefile", "pyproject.toml", "README.md")
PLACEHOLDER = re.compile(r"[<>{}*~]|\.\.\.")


def doc_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


# ---------------------------------------------------------------------------------------------------------------
# Extracting commands


def _code(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(fenced blocks, inline spans) of a Markdown text, each with the line it starts on."""
    blocks, spans, prose = [], [], []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*(```+|~~~+)", lines[i])
        if fence:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            blocks.append((start + 1, "\n".join(body)))
        else:
            prose.append((i + 1, lines[i]))
        i += 1
    # Inline spans may run over a line break (not over a blank line): join the prose paragraph by paragraph.
    paragraph: list[tuple[int, str]] = []
    for number, line in [*prose, (0, "")]:
        if line.strip() and number:
            paragraph.append((number, line))
            continue
        if paragraph:
            joined = "\n".join(text for _, text in paragraph)
            for match in re.finditer(r"(?<!`)`([^`]+)`(?!`)", joined):
                line_no = paragraph[0][0] + joined.count("\n", 0, match.start())
                spans.append((line_no, match.group(1).replace("\n", " ")))
        paragraph = []
    return blocks, spans


def _logical_lines(block: str) -> Iterator[str]:
    """A code block's commands: backslash continuations and open quotes joined, heredoc bodies dropped."""
    lines = block.split("\n")
    i, current = 0, ""
    heredoc: str | None = None
    while i < len(lines):
        line = lines[i]
        i += 1
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        current = f"{current}\n{line}" if current else line
        if current.endswith("\\"):
            current = current[:-1]
            continue
        if _open_quote(current):
            continue
        marker = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", current)
        if marker:
            heredoc = marker.group(1)
        yield current
        current = ""
    if current:  # a quote never closed (prose in a code block): each line for itself
        yield from current.split("\n")


def _open_quote(text: str) -> bool:
    quote = None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char == "#":
            return False  # the rest is a comment
        elif char in "'\"":
            quote = char
    return quote is not None


def _commands(line: str) -> Iterator[list[str]]:
    """The simple commands of a shell line, as argument lists (env assignments dropped)."""
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:
        return
    command: list[str] = []
    for token in [*tokens, ";"]:
        if token in ("&&", "||", ";", "|", "(", ")"):
            while command and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", command[0]):
                command.pop(0)
            if command and command[0] in COMMAND_WORDS:
                yield command
            command = []
        else:
            command.append(token)


def doc_commands(root: Path) -> list[tuple[str, list[str]]]:
    """(where, argv) of every command in README.md and docs/*.md."""
    found = []
    for path in doc_files(root):
        blocks, spans = _code(path.read_text(encoding="utf-8"))
        name = path.relative_to(root).as_posix()
        for start, block in blocks:
            for line in _logical_lines(block):
                for argv in _commands(line):
                    found.append((f"{name}:{start}", argv))
        for line_no, span in spans:
            if span.split(" ", 1)[0] in COMMAND_WORDS:
                for argv in _commands(span):
                    found.append((f"{name}:{line_no}", argv))
    return found


def _strip(token: str) -> str:
    return token.strip("[]")


def _options(argv: list[str]) -> list[str]:
    """The option names among arguments (up to a `--`), without their `=value`."""
    names = []
    for token in map(_strip, argv):
        if token == "--":
            break
        if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", token):
            names.append(token.split("=", 1)[0])
    return names


# ---------------------------------------------------------------------------------------------------------------
# make


def make_targets(root: Path) -> set[str]:
    targets: set[str] = set()
    for line in (root / "Makefile").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-/$() ]+):(?!=)", line)
        if match and not line.startswith("\t"):
            targets.update(match.group(1).split())
    return targets


def make_problems(root: Path) -> list[str]:
    targets = make_targets(root)
    problems = []
    for where, argv in doc_commands(root):
        if argv[0] != "make":
            continue
        for token in argv[1:]:
            if token.startswith("-") or "=" in token or PLACEHOLDER.search(token):
                continue
            for target in token.split("/"):  # `make demo/dryrun/report` in prose names three
                if target not in targets:
                    problems.append(f"{where}: `make {target}`: no such target in the Makefile")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# python -m nodedp


@cache
def nodedp_verbs() -> dict[str, set[str]]:
    from nodedp.cli import build_parser

    parser = build_parser()
    verbs = {"": set(parser._option_string_actions)}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for verb, sub in action.choices.items():
                verbs[verb] = set(sub._option_string_actions)
    return verbs


def _nodedp_args(argv: list[str]) -> list[str] | None:
    if argv[0] == "nodedp":
        return argv[1:]
    if argv[0] in ("python", "python3") and argv[1:3] == ["-m", "nodedp"]:
        return argv[3:]
    return None


def nodedp_problems(root: Path) -> list[str]:
    verbs = nodedp_verbs()
    problems = []
    for where, argv in doc_commands(root):
        args = _nodedp_args(argv)
        if args is None:
            continue
        verb = args[0] if args and not args[0].startswith("-") else ""
        if verb not in verbs:
            problems.append(f"{where}: `nodedp {verb}`: no such verb (verbs: {', '.join(sorted(verbs)[1:])})")
            continue
        for option in _options(args[1:] if verb else args):
            if option not in verbs[verb]:
                problems.append(f"{where}: `nodedp {verb} {option}`: no such option")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# python benchmarks/<x>.py


def script_defines(script: Path) -> frozenset[str]:
    """The option strings of the script's `add_argument` calls (hidden ones included), read without running it."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            names.update(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return frozenset(names)


@cache
def script_help(script: Path, source: str) -> frozenset[str]:
    """The options `script --help` prints (run only for options the source does not spell out)."""
    result = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=300, cwd=script.parents[1]
    )
    assert result.returncode == 0, f"{script.name} --help failed:\n{result.stderr[-2000:]}"
    return frozenset(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", result.stdout))


def benchmark_problems(root: Path) -> list[str]:
    problems = []
    for where, argv in doc_commands(root):
        if argv[0] not in ("python", "python3") or len(argv) < 2 or not argv[1].startswith("benchmarks/"):
            continue
        script = root / argv[1]
        if not script.is_file():
            problems.append(f"{where}: `{argv[1]}`: no such script")
            continue
        defined = script_defines(script)
        for option in _options(argv[2:]):
            if option not in defined and option not in script_help(script, script.read_text(encoding="utf-8")):
                problems.append(f"{where}: `{argv[1]} {option}`: no such option (`{argv[1]} --help`)")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# snakemake

_WORKFLOW_PATTERNS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import OutputSettings, ResourceSettings
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(resource_settings=ResourceSettings(), snakefile=Path("Snakefile"), workdir=Path.cwd())
    rules = workflow._workflow.rules  # the parsed workflow: its rules and their output files
    print(json.dumps({r.name: [[str(o), o.regex().pattern] for o in r.output] for r in rules}))
"""


@cache
def workflow_outputs(root: Path) -> dict[str, list[tuple[str, str]]]:
    """Each rule of the workflow with its output patterns (as written, and as Snakemake's regex)."""
    result = subprocess.run(
        [sys.executable, "-c", _WORKFLOW_PATTERNS], capture_output=True, text=True, timeout=600, cwd=root
    )
    assert result.returncode == 0, f"parsing the workflow failed:\n{result.stderr[-3000:]}"
    return {rule: [tuple(o) for o in outputs] for rule, outputs in json.loads(result.stdout.splitlines()[-1]).items()}


def _snakemake_targets(args: list[str]) -> tuple[list[str], str | None]:
    from snakemake.cli import get_argument_parser

    parser = get_argument_parser()
    messages: list[str] = []

    def error(message: str) -> NoReturn:
        messages.append(message)
        sys.exit(2)

    parser.error = error  # type: ignore[method-assign]
    try:
        namespace = parser.parse_args(args)
    except SystemExit:
        return [], messages[0] if messages else "not a valid command line"
    # Options that take every word after them swallow a target written there, as Snakemake parses the line: a
    # config file that is no YAML/JSON file name, a --config entry that is no key=value.
    swallowed = [str(f) for f in namespace.configfile or [] if not re.search(r"\.(ya?ml|json)$", str(f))]
    swallowed += [str(c) for c in namespace.config or [] if "=" not in str(c)]
    if swallowed:
        return [], f"{swallowed} taken as config, not targets: write targets before --configfile/--config"
    return sorted(namespace.targets or []), None


def _produced(target: str, outputs: dict[str, list[tuple[str, str]]]) -> bool:
    if "<" in target:  # `results/runs/<dataset>/.../metrics.json`: a shape; any value fits a wildcard
        shape = re.sub(r"<[^<>]*>", "X", target)
        loose = [re.sub(r"\\\{[^{}]*\\\}", ".+", re.escape(written)) for o in outputs.values() for written, _ in o]
        return any(re.fullmatch(pattern, shape) for pattern in loose)
    return any(re.fullmatch(regex, target) for o in outputs.values() for _, regex in o)


def snakemake_problems(root: Path) -> list[str]:
    commands = [(where, argv) for where, argv in doc_commands(root) if argv[0] == "snakemake"]
    if not commands:
        return []
    outputs = workflow_outputs(REPO)  # the workflow itself is not part of the documentation checked
    problems = []
    for where, argv in commands:
        targets, error = _snakemake_targets([a for a in argv[1:] if a != "..."])
        if error:
            problems.append(f"{where}: `{' '.join(argv)}`: {error}")
        for target in targets:
            if target not in outputs and not _produced(target, outputs):
                problems.append(f"{where}: `snakemake {target}`: neither a rule nor an output of one")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# links and paths


def _slug(heading: str) -> str:
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", text, flags=re.M)}


def path_problems(root: Path) -> list[str]:
    problems = []
    for path in doc_files(root):
        name = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        _, spans = _code(text)
        in_fence = False
        links = []
        for line, content in enumerate(text.split("\n"), start=1):
            if re.match(r"^\s*(```|~~~)", content):
                in_fence = not in_fence
            elif not in_fence:
                links += [(line, m.group(1)) for m in re.finditer(r"\]\(([^)\s]+)\)", content)]
        for line, link in links:
            if re.match(r"[a-z]+:", link):
                continue
            file_part, _, anchor = link.partition("#")
            target = (path.parent / file_part).resolve() if file_part else path
            if not target.exists():
                problems.append(f"{name}:{line}: link `{link}`: no such file")
            elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
                problems.append(f"{name}:{line}: link `{link}`: no heading `#{anchor}` in {target.name}")
        for line_no, span in spans:
            for token in span.split():
                token = _strip(token).rstrip(",.;:")
                file_part, _, test_name = token.partition("::")
                first = file_part.split("/", 1)[0]
                is_path = (first in TRACKED_ROOTS and "/" in file_part) or file_part in TRACKED_FILES
                if not is_path or PLACEHOLDER.search(file_part) or re.search(r"[\[\]()$]", file_part):
                    continue
                if not (root / file_part).exists():
                    problems.append(f"{name}:{line_no}: `{file_part}`: no such file or folder")
                elif test_name and f"def {test_name}(" not in (root / file_part).read_text(encoding="utf-8"):
                    problems.append(f"{name}:{line_no}: `{token}`: no such test")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# modules and source files (docs/design/ included)

# A dotted name of the package (`nodedp.analysis.style`, `nodedp.data.degree.bound_out_degree`), not part of a path
# or a file name (`envs/nodedp.yaml`).
DOTTED = re.compile(r"(?<![\w./-])nodedp(?:\.[A-Za-z_]\w*)+")


def all_doc_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def _bound_names(path: Path) -> frozenset[str]:
    """The names a module's top level binds (definitions, assignments, imports, in `if`/`try` blocks too), and the
    names its assignments list as strings (`__all__`, a lazy package's submodule -> names map)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
                if node.value is not None:
                    names.update(
                        c.value
                        for c in ast.walk(node.value)
                        if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.isidentifier()
                    )
            elif isinstance(node, ast.If | ast.Try):
                visit([*node.body, *node.orelse, *getattr(node, "finalbody", [])])
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return frozenset(names)


def _dotted_problem(src: Path, dotted: str) -> str | None:
    """Why ``dotted`` names nothing in ``src`` (the package's folder): each part must be a subpackage or module of
    the package before it, or a name that package (its __init__) or module binds; None where it names something."""
    parts = dotted.split(".")
    where = src
    for i, part in enumerate(parts[1:], start=1):
        if (where / part / "__init__.py").is_file():
            where = where / part
        elif (where / f"{part}.py").is_file():
            module = where / f"{part}.py"
            if i + 1 < len(parts) and parts[i + 1] not in _bound_names(module):
                return f"{'.'.join(parts[: i + 1])} defines no {parts[i + 1]}"
            return None
        elif part not in _bound_names(where / "__init__.py"):
            return f"no module, package or name {'.'.join(parts[: i + 1])}"
        else:
            return None
    return None


def _source_file(src: Path, text: str) -> Iterator[tuple[str, Path]]:
    """(as written, the file it names) for each path of a module of the package in ``text``: `src/nodedp/x.py`,
    `nodedp/x.py`, or relative to the package, `analysis/x.py` (its first folder a subpackage)."""
    packages = sorted(p.parent.name for p in src.glob("*/__init__.py"))
    pattern = rf"(?<![\w./-])((?:src/)?nodedp/[\w/]*\w\.py|(?:{'|'.join(packages)})/[\w/]*\w\.py)(?![\w/])"
    for match in re.finditer(pattern, text):
        written = match.group(1)
        yield written, src / re.sub(r"^(src/)?nodedp/", "", written)


def _layout_files(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, folder under src/nodedp, file) for each entry of the layout of the package (docs/workflow.md's fenced
    block under `src/nodedp/`: a folder, as its `__init__.py`, or modules) and each bare file name (`stability.py`)
    it gives in a folder's description."""
    folder: str | None = None
    for line_no, line in enumerate(text.split("\n"), start=1):
        if line.startswith("src/nodedp/"):
            folder = ""
            continue
        if folder is None:
            continue
        if not line.startswith(" ") or line.startswith("```"):
            folder = None
            continue
        entry = re.match(r"^  (\S[^ ]*(?: \S[^ ]*)*?)(?:\s{2,}|$)", line)
        if entry:  # `  analysis/   ...` names a folder, `  io.py, provenance.py   ...` modules of the package
            names = [n.strip() for n in entry.group(1).split(",")]
            folder = names[0].rstrip("/") if names[0].endswith("/") else ""
            for name in names:
                yield line_no, "", f"{name}__init__.py" if name.endswith("/") else name
        description = line[26:] if len(line) > 26 else ""
        for match in re.finditer(r"(?<![\w./-])(\w+\.py)\b", description):
            yield line_no, folder, match.group(1)


def module_problems(root: Path) -> list[str]:
    """Every dotted module name (`nodedp.x.y`) and module path (`src/nodedp/x/y.py`, `x/y.py`) in README.md and
    docs/**/*.md names what the package holds, and so does every file the layout of docs/workflow.md gives."""
    src = root / "src" / "nodedp"
    problems = []
    for path in all_doc_files(root):
        name = path.relative_to(root).as_posix()
        for line_no, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
            for match in DOTTED.finditer(line):
                problem = _dotted_problem(src, match.group(0))
                if problem:
                    problems.append(f"{name}:{line_no}: `{match.group(0)}`: {problem}")
            for written, file in _source_file(src, line):
                if not file.is_file():
                    problems.append(f"{name}:{line_no}: `{written}`: no such module ({file.relative_to(root)})")
    workflow = root / "docs" / "workflow.md"
    for line_no, folder, file in _layout_files(workflow.read_text(encoding="utf-8")):
        if not (src / folder / file).is_file():
            where = f"src/nodedp/{folder}/" if folder else "src/nodedp/"
            problems.append(f"docs/workflow.md:{line_no}: layout: `{file}`: no such module in {where}")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# The tests


def test_the_docs_show_commands() -> None:
    # The extraction finds what the README plainly shows; an empty extraction would make every check vacuous.
    shown = {" ".join(argv[:2]) for _, argv in doc_commands(REPO)}
    assert {"make demo", "make test", "python -m", "snakemake --profile"} <= shown


def test_make_targets_exist() -> None:
    assert make_problems(REPO) == []


def test_nodedp_verbs_and_options_exist() -> None:
    assert nodedp_problems(REPO) == []


def test_benchmark_scripts_and_options_exist() -> None:
    assert benchmark_problems(REPO) == []


def test_snakemake_targets_exist() -> None:
    assert snakemake_problems(REPO) == []


def test_links_and_paths_exist() -> None:
    assert path_problems(REPO) == []


def test_modules_and_source_files_named_exist() -> None:
    assert module_problems(REPO) == []


def test_the_module_checks_see_what_the_docs_name() -> None:
    # An empty extraction would make the check vacuous.
    texts = [p.read_text(encoding="utf-8") for p in all_doc_files(REPO)]
    dotted = {m.group(0) for text in texts for m in DOTTED.finditer(text)}
    assert {"nodedp.analysis.style", "nodedp.data.degree.bound_out_degree"} <= dotted
    src = REPO / "src" / "nodedp"
    assert any(written.startswith("src/nodedp/") for text in texts for written, _ in _source_file(src, text))
    layout = {(folder, file) for _, folder, file in _layout_files((REPO / "docs" / "workflow.md").read_text())}
    assert {("analysis", "style.py"), ("data", "stability.py"), ("", "io.py"), ("", "analysis/__init__.py")} <= layout


@pytest.fixture
def copy_of_docs(tmp_path: Path) -> Path:
    """README.md, docs/*.md and what their paths and links name, copied: the checks run on the copy."""
    for name in ("README.md", "Makefile", "Snakefile", "config.yaml", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    for folder in (*TRACKED_ROOTS,):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _typo(root: Path, line: str) -> None:
    readme = root / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("line", "check"),
    [
        ("Run `make dmeo` first.", make_problems),
        ("```bash\npython -m nodedp chek-config my.yaml\n```", nodedp_problems),
        ("`python -m nodedp train --epsilom 4`", nodedp_problems),
        ("`python benchmarks/cell_overhead.py --studdy demo`", benchmark_problems),
        ("`python benchmarks/dp_stp.py`", benchmark_problems),
        ("```bash\nsnakemake --cores 2 paper/main/tables/acuracy.md\n```", snakemake_problems),
        ("`snakemake -n --quiet rules demo`", snakemake_problems),
        ("```bash\nsnakemake --cores 2 --configfile my-grid.yaml runs\n```", snakemake_problems),
        ("See [the audit](docs/audti.md).", path_problems),
        ("See [the audit](docs/audit.md#no-such-heading).", path_problems),
        ("The schema: `workflow/schemas/config.schema.yml`.", path_problems),
        ("The figures: `nodedp.analysis.figures`.", module_problems),
        ("The frontier: nodedp.analysis.frontier.plot_frontiers.", module_problems),
        ("The style lives in src/nodedp/analysis/styles.py.", module_problems),
        ("See analysis/figure.py.", module_problems),
    ],
)
def test_a_typo_is_caught(copy_of_docs: Path, line: str, check) -> None:
    before = check(copy_of_docs)
    _typo(copy_of_docs, line)
    new = [problem for problem in check(copy_of_docs) if problem not in before]
    assert len(new) == 1, new
    assert new[0].startswith("README.md:")
