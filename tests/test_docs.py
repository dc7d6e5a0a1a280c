"""The generated documentation matches the registry it is generated from."""

import re
from pathlib import Path

from dmlpy.cli import render_rules_markdown

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_rules_md_is_generated_from_the_current_registry() -> None:
    committed = (DOCS / "rules.md").read_text(encoding="utf-8")
    assert committed.strip() == render_rules_markdown().strip(), "docs/rules.md is stale: run `python -m dmlpy rules --markdown > docs/rules.md`"


def test_no_file_cites_documents_users_do_not_have() -> None:
    """Docstrings, messages and docs cite DirectML's public pages or the repository's docs, not internal notes."""
    root = DOCS.parent
    internal = re.compile(r"DESIGN section|DESIGN\.md|\breference (?:sections? )?\d+\.\d+|\bappendix [AB]\b|\.\./shared|\[(?:AI|SDK|DXD|ORT):|\[H64\]|\[DMLX\]")
    offenders = []
    for folder in ("dmlpy", "docs", "samples", "include", "benchmarks", "tests"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".py", ".md", ".c", ".h", ".cdef", ".json") and path.is_file():
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if internal.search(line) and path.name != "test_docs.py":
                        offenders.append(f"{path.relative_to(root)}:{number}: {line.strip()[:100]}")
    for number, line in enumerate((root / "README.md").read_text(encoding="utf-8").splitlines(), 1):
        if internal.search(line):
            offenders.append(f"README.md:{number}: {line.strip()[:100]}")
    assert not offenders, "cite docs/ or DirectML's public pages instead:\n" + "\n".join(offenders)
