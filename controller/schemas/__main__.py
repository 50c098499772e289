import sys

from controller.schemas import main

sys.exit(main(sys.argv[1:]))
