"""The WSGI entry point gunicorn serves (`hypd web`)."""

from app import create_app

app = create_app()
