"""The demo page at `/`: static HTML, CSS and JavaScript over the public API (no API key for
the page itself; its API calls send the key typed into it)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

router = APIRouter(tags=["page"])


@router.get("/", include_in_schema=False, operation_id="demo_page")
async def demo_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html")


def static_files() -> StaticFiles:
    """Mounted at /static: the page's script and style sheet."""
    return StaticFiles(directory=STATIC_DIR)
