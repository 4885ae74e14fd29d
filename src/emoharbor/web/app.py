"""The rating app: ``create_app(study_path, origins)`` returns a FastAPI app over one study folder, served at
the addresses ``origins`` (``http://HOST:PORT``, or the public HTTPS address in front of it): forms are
accepted only from pages of those.

Rater pages live under ``/r/{token}`` (the personal token from ``emoharbor study invite``), the admin
page at ``/admin/{token}``. A wrong or missing token is a 404 with no data. Items are addressed by
their position in the rater's own queue, so no item id, competitor or conversation id is in a URL.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import EmoharborError
from .forms import CONVERSATION, PAIR, FormError, clean, missing
from .origins import origin_of
from .pages import HERE, conversation_dims, heart_dims, item_context, render
from .progress import admin_data
from .security import add_headers, check_csrf, posted_form
from .study import Assignment, Rater, Study

ACTIONS = ("save", "submit", "autosave")
BAD_LINK = "This link is not valid. Check the link you were given."


def create_app(study_path: Path, origins: Iterable[str]) -> FastAPI:
    allowed = frozenset(o for o in map(origin_of, origins) if o is not None)
    if not allowed:
        raise EmoharborError("the rating app needs the address it is served at (http://HOST:PORT)")
    study = Study.open(Path(study_path))
    app = FastAPI(title="emoharbor rating study", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.origins = allowed
    app.middleware("http")(add_headers)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.exception_handler(StarletteHTTPException)(error_page)
    app.exception_handler(RequestValidationError)(bad_path)
    app.get("/favicon.ico")(favicon)
    pages = RaterPages(study)
    app.get("/r/{token}", response_class=HTMLResponse)(pages.home)
    app.get("/r/{token}/instructions", response_class=HTMLResponse)(pages.instructions)
    app.get("/r/{token}/next")(pages.next_item)
    app.get("/r/{token}/done", response_class=HTMLResponse)(pages.finished)
    app.get("/r/{token}/item/{n}", response_class=HTMLResponse)(pages.show)
    app.post("/r/{token}/item/{n}")(pages.post)
    app.get("/admin/{token}", response_class=HTMLResponse)(pages.admin)
    return app


async def error_page(request: Request, exc: StarletteHTTPException) -> HTMLResponse:
    message = exc.detail if exc.status_code != 404 or exc.detail != "Not Found" else BAD_LINK
    return HTMLResponse(render("error.html", status=exc.status_code, message=message), exc.status_code)


async def bad_path(request: Request, exc: RequestValidationError) -> HTMLResponse:
    return HTMLResponse(render("error.html", status=404, message=BAD_LINK), 404)


def favicon() -> Response:
    return Response(status_code=204)


class RaterPages:
    """The pages of one study: each rater's (by token) and the admin's."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.dims = study.heart_dimensions()
        self.rated = {it.rated for it in study.items()}

    def rater(self, token: str) -> Rater:
        found = self.study.rater_by_token(token)
        if found is None:
            raise HTTPException(404, BAD_LINK)
        return found

    def slot(self, r: Rater, n: int) -> tuple[Assignment, list[Assignment]]:
        queue = self.study.queue(r.id)
        if not 1 <= n <= len(queue):
            raise HTTPException(404, "There is no such item in your list.")
        return queue[n - 1], queue

    def item_page(self, r: Rater, token: str, n: int, *, todo: list[str] | None = None,
                  saved: bool = False) -> HTMLResponse:  # fmt: skip
        a, queue = self.slot(r, n)
        study = self.study
        item = study.item(a.item_id)
        study.mark_opened(a)
        html = render("item.html", rater=r.name, token=token, csrf=study.csrf_token(r.id), position=n, total=len(queue),
                      done=sum(q.status == "submitted" for q in queue), answers=study.answers(r.id, item.id),
                      submitted=a.status == "submitted", missing=todo or [], saved=saved,
                      **item_context(item, a, self.dims))  # fmt: skip
        return HTMLResponse(html, 422 if todo else 200)

    def next_open(self, r: Rater, token: str, after: int = 0) -> RedirectResponse:
        """To the first unsubmitted item after position ``after`` (else the first one), or to the end page."""
        todo = [a.position for a in self.study.queue(r.id) if a.status != "submitted"]
        n = next((p for p in todo if p > after), todo[0] if todo else None)
        return RedirectResponse(f"/r/{token}/item/{n}" if n else f"/r/{token}/done", 303)

    def home(self, token: str) -> str:
        r = self.rater(token)
        queue = self.study.queue(r.id)
        done = sum(a.status == "submitted" for a in queue)
        started = done > 0 or any(a.opened is not None for a in queue)
        return render("home.html", rater=r.name, token=token, total=len(queue), done=done, started=started)

    def instructions(self, token: str) -> str:
        self.rater(token)
        rated = self.rated
        return render("instructions.html", token=token, pair=PAIR in rated, conversation=CONVERSATION in rated,
                      heart=heart_dims(self.dims), scales=conversation_dims())  # fmt: skip

    def next_item(self, token: str) -> RedirectResponse:
        return self.next_open(self.rater(token), token)

    def finished(self, token: str) -> str:
        r = self.rater(token)
        queue = self.study.queue(r.id)
        left = [a.position for a in queue if a.status != "submitted"]
        return render("done.html", rater=r.name, token=token, total=len(queue), left=left)

    def show(self, token: str, n: int, saved: int = 0) -> HTMLResponse:
        return self.item_page(self.rater(token), token, n, saved=bool(saved))

    def post(self, token: str, n: int, form: Annotated[dict[str, str], Depends(posted_form)]) -> Response:
        r = self.rater(token)
        check_csrf(self.study, r.id, form)
        a, _ = self.slot(r, n)
        item = self.study.item(a.item_id)
        action = form.get("action", "save")
        if action not in ACTIONS:
            raise HTTPException(400, f"Unknown action {action[:20]!r}.")
        try:
            fields = clean(item.rated, self.dims, form)
        except FormError as e:
            raise HTTPException(400, str(e)) from None

        def gaps(have: dict[str, str]) -> list[str]:
            return missing(item.rated, self.dims, have)

        ok, todo = self.study.save(r.id, item.id, fields, submit_if=gaps if action == "submit" else None)
        if not ok:
            raise HTTPException(409, "You already submitted this item, so its answers can no longer be changed.")
        if action == "autosave":
            return JSONResponse({"saved": len(fields)})
        if action == "submit":
            if todo:
                return self.item_page(r, token, n, todo=todo)
            return self.next_open(r, token, n)
        return RedirectResponse(f"/r/{token}/item/{n}?saved=1", 303)

    def admin(self, token: str) -> str:
        if not self.study.is_admin(token):
            raise HTTPException(404, BAD_LINK)
        data: dict[str, Any] = admin_data(self.study)
        return render("admin.html", **data)
