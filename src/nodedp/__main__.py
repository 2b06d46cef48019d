import sys

from nodedp.cli import main

sys.exit(main())
