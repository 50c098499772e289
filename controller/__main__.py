"""`python -m controller` is `ctl`."""
from controller.cli import entry

entry()
