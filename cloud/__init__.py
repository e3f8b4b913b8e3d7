"""Thin adapters to AWS and Kubernetes, and the settings every layer reads."""
