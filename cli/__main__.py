"""`python -m cli`: the same as the `cheapqa` command."""

import sys

from cli.main import main

sys.exit(main())
