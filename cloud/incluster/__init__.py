"""Programs hypd ships into a cluster's pods (mounted from a ConfigMap hypd makes from the
file itself, so what runs is what is tested). They run on the image's own Python, so they use
the standard library only and keep to Python 3.10."""
