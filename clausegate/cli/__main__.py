from clausegate.cli import app

app()
