"""The scripted AG-UI server: `harness` (stdlib only) builds its venv and runs `app.py` in it."""
