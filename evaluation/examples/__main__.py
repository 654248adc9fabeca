import sys

from evaluation.examples import main

sys.exit(main())
