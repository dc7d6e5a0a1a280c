"""``python -m dmlpy``: what dmlpy is running on, and (more commands to come) tools for descs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from dmlpy._version import NATIVE_ABI_VERSION, __version__
from dmlpy.backends import native_available, native_status
from dmlpy.enums import c_name
from dmlpy.support import OPERATORS


def _info(_: argparse.Namespace) -> int:
    print(f"dmlpy {__version__} (native ABI {NATIVE_ABI_VERSION})")
    backend = os.environ.get("DMLPY_BACKEND", "auto")
    chosen = ("native" if native_available() else "numpy") if backend == "auto" else backend
    print(f"backend: {chosen}" + (" (DMLPY_BACKEND)" if backend != "auto" else ""))
    print(f"native: {'available' if native_available() else 'unavailable'}: {native_status()}")
    print("operators (feature level introduced; tensor support by level):")
    for support in OPERATORS.values():
        print(f"  {c_name(support.operator_type)} (FL {support.introduced.dotted})")
        for level, table in support.tables.items():
            rows = ", ".join(
                f"{name} {row.dimension_counts[0]}-{row.dimension_counts[1]}D {'/'.join(t.name for t in row.data_types)}"
                for name, row in table.items()
            )
            print(f"    FL {level.dotted}: {rows}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dmlpy", description="DirectML descriptors, validated and run anywhere.")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="version, backend, supported operators and feature levels")
    info.set_defaults(handler=_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
