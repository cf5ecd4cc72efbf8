"""The frameworks' own AG-UI servers: `harness` (stdlib only) builds each venv and runs `apps/<name>_app.py`."""
