"""hypd's sandbox: a local AWS (moto behind a layer of faults, holds, timed states and a call
log) so the product runs, demos and is tested without an AWS account.

Nothing in the product imports this package; only the launcher starts it.
"""
