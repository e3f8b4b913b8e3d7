"""`python -m sandbox`: the local AWS in the foreground."""

from sandbox.serve import main

raise SystemExit(main())
