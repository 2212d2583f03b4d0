# The Celery app is loaded with Django so that shared tasks sent from the server processes
# use it (and its Redis broker) rather than Celery's default app.
from config.celery import app as celery_app

__all__ = ["celery_app"]
