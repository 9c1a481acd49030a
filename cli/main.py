"""The `hafiza` console script: the group from app.py with every command registered."""

from .app import cli
from . import admin, read, write  # noqa: F401  (each module registers its commands on `cli`)


def main() -> None:
    cli(prog_name="hafiza")


if __name__ == "__main__":
    main()
