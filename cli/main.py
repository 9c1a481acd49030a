"""The `hafiza` console script.

`hafiza hook ...` runs on every prompt, so it goes straight to the stdlib-only
hook entry point without importing argparse or the command modules.
"""

import os
import sys


def main() -> None:
    """The console script: the command, then an exit without Python's teardown (hooks/hafiza_hook.py)."""
    from hafiza.hooks.hafiza_hook import leave

    try:
        command()
    except SystemExit as exc:
        leave(exc.code)
    leave(0)


def command() -> None:
    """The command line in `sys.argv`, run in this process (raises SystemExit for a status other than 0)."""
    os.umask(0o077)  # the vault and everything hafiza writes are the user's alone (README: "The vault")
    if sys.argv[1:2] == ["hook"] and "--help" not in sys.argv and "-h" not in sys.argv:
        from hafiza.hooks.entry import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    if sys.argv[1:] == ["--version"]:  # a script's check that hafiza is there: no parser, no command modules
        from hafiza.vault import __version__

        print(f"hafiza, version {__version__}")
        return
    from .app import run

    run(sys.argv[1:])


if __name__ == "__main__":
    main()
