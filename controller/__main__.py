"""`python -m controller` is `ctl`."""
import sys

from controller.cli import main

sys.exit(main())
