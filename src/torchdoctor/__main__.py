"""`python -m torchdoctor`."""

import os
import sys

# `python -m` puts the current directory first on sys.path: a user's random.py or copy.py there
# (the very files stdlib-shadowing-file reports) would replace the standard library inside the
# doctor itself. The doctor never imports the user's code by name.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from torchdoctor.cli import main  # noqa: E402

sys.exit(main())
