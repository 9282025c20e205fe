"""The ``skdp`` command."""

from __future__ import annotations

import argparse
import sys

import skdp

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from skdp._demo import run_demo

    return run_demo(random_state=args.random_state)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skdp",
        description="Differentially private estimators for scikit-learn.",
    )
    parser.add_argument("--version", action="version", version=f"skdp {skdp.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="run the private estimators on data bundled with the install and print a report",
        description="Run skdp on the diabetes data that ships with scikit-learn "
                    "and print a report. Offline; a few seconds.",
    )
    demo.add_argument("--random-state", type=int, default=0,
                      help="seed, for a reproducible report (default: 0). A fixed seed is "
                           "for demonstration only: real releases use fresh randomness.")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
