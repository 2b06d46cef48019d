import sys

from nodedp.worker import delegate

status = delegate(sys.argv[1:])  # the warm worker, where the workflow asks for one ($NODEDP_WORKER)
if status is None:
    from nodedp.cli import main

    status = main()
sys.exit(status)
