"""Write workflow/package-files.txt (lem.run.envs.package_files_text): the list of the package's files and their
sha256 by which a module from a git repository is read (workflow/rules/source.smk). Run it after adding,
removing or editing a file under src/ or pyproject.toml; `--check` exits 1 when the file is not current."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from lem.core.files import write_text  # noqa: E402
from lem.run.envs import PACKAGE_FILES, package_files_text  # noqa: E402


def main(argv: list[str]) -> int:
    out = ROOT / PACKAGE_FILES
    text = package_files_text(ROOT)
    if argv == ["--check"]:
        if out.is_file() and out.read_text(encoding="utf-8") == text:
            return 0
        print(f"{PACKAGE_FILES} is not current: run python scripts/package_files.py", file=sys.stderr)
        return 1
    if argv:
        print("usage: python scripts/package_files.py [--check]", file=sys.stderr)
        return 2
    write_text(out, text)  # atomically
    print(f"wrote {PACKAGE_FILES}: {text.count(chr(10)) - 3} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
