"""``python -m spearmint_nn``: the same as the ``spearmint-nn`` command."""
import sys

from .cli import main

sys.exit(main())
