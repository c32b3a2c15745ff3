"""`python -m cheapqa_client`: the client commands."""

import sys

from cheapqa_client.cli.main import main

sys.exit(main())
