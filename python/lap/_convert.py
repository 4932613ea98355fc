"""The command line of a converter lapc-run import runs
(python3 -m lap.<format> SOURCE OUT): exit status 0, or 2 with lap's
message on stderr."""

import sys

from lap.errors import LapError


def main(argv, convert, usage):
    """Runs convert(SOURCE, OUT) from `argv`; `usage` names the
    arguments."""
    if len(argv) != 3:
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    try:
        convert(argv[1], argv[2])
    except LapError as e:
        print(e, file=sys.stderr)
        return 2
    return 0
