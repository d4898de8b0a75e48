"""The main job: simulate matches under every preset and print what happened."""

from __future__ import annotations

import sys

from arschloch_env.cli import main as cli_main
from arschloch_env.rules import PRESETS


def main(argv: list[str] | None = None) -> int:
    for preset in PRESETS:
        print(f"\n### {preset}: 4 players, 20 matches of random legal play")
        code = cli_main(["simulate", "--rules", preset, "--players", "4", "--matches", "20",
                         "--seed", "0", "--record", f"runs/demo/{preset}.jsonl"])
        if code:
            return code
    print("\nGame records are in runs/demo/; replay one with:\n"
          "  .venv/bin/arschloch replay runs/demo/culo.jsonl | less")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
