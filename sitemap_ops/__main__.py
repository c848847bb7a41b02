"""`sitemap-ops` and `python -m sitemap_ops`: Ctrl-C is one line and exit 130 from the start, imports included."""

from __future__ import annotations

import sys


def run() -> None:
    # The command line's imports take a noticeable part of a second; a Ctrl-C then, or before the command's
    # own handling starts, must not print a traceback (sitemap_ops.cli.main handles every later one).
    try:
        from sitemap_ops.cli import main

        code = main()
    except KeyboardInterrupt:
        command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
        name = f"sitemap-ops {command}" if command else "sitemap-ops"
        print(f"{name}: interrupted before it started; nothing was changed", file=sys.stderr)
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    run()
