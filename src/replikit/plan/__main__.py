"""`python -m replikit.plan CONFIG [CONFIG ...]`: the priced bill of a configuration (`bill.main`)."""

import sys

from replikit.plan.bill import main

sys.exit(main())
