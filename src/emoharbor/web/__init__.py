"""The human rating app: a study store (SQLite, no web dependencies) and a small FastAPI app over it.

``study``, ``build``, ``export`` and ``progress`` need only the core install; ``app``, ``pages`` and
``security`` need the ``web`` extra (fastapi, uvicorn, jinja2, python-multipart) and are imported lazily.
"""
