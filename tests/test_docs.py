"""The generated documentation matches the registry it is generated from."""

from pathlib import Path

from dmlpy.cli import render_rules_markdown

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_rules_md_is_generated_from_the_current_registry() -> None:
    committed = (DOCS / "rules.md").read_text(encoding="utf-8")
    assert committed.strip() == render_rules_markdown().strip(), "docs/rules.md is stale: run `python -m dmlpy rules --markdown > docs/rules.md`"
