"""``python -m arschloch_env``: the ``arschloch`` command, for an environment whose scripts
are not on the PATH."""

import sys

from arschloch_env.launch import main

sys.exit(main())
