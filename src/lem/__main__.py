"""`python -m lem <stage> <verb> ...` is `lem <stage> <verb> ...`: how a rule runs the repository's sources in an
environment where the project is not installed (envs/laser.yaml, Python 3.8, for `lem reference encode`)."""

import sys

from lem.cli import main

sys.exit(main())
