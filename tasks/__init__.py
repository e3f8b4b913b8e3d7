"""hypd."""
