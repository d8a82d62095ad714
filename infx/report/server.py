"""``infx serve RESULTS``: a small read-only dashboard (aiohttp), bound to 127.0.0.1 by default.

Routes (GET/HEAD only): ``/`` lists the runs; ``/runs/{run}`` renders a run's report, with
``?baseline=RUN`` overlaying another run; ``/latest`` renders the latest curves (each from one run's snapshot,
``?as_of=DATE|RUN`` as they stood then) and ``/api/frontiers?as_of=...`` gives them as JSON;
``/files/{run}/manifest.json`` and ``/files/{run}/points/{point}/{file}`` serve a point's files (logs,
result.json); ``/api/runs`` lists runs as JSON; ``/static/plotly.min.js``.

Nothing outside RESULTS can be read: a file path is split into segments, any ``..``/``.``/empty
segment, backslash or NUL is refused, the resolved path must stay inside RESULTS (symlinks
included), and only the per-point files of the layout are served (not the database).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import math
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from pydantic import BaseModel, ConfigDict, Field

from infx.diagnostics import Diagnostic, InfxError
from infx.results.layout import (
    ENGINE_LOG,
    MANIFEST,
    POINT_FILE,
    POINTS,
    RECORDS_FILE,
    RESULT_FILE,
    STATUS_FILE,
    ResultsDir,
    check_name,
)
from infx.results.store import Store

SERVABLE = {POINT_FILE: "application/json", STATUS_FILE: "application/json", RESULT_FILE: "application/json",
            ENGINE_LOG: "text/plain", RECORDS_FILE: "application/gzip",
            # accuracy evals (infx.evals.protocol): graded results, per-question samples, outcome, lm-eval's log
            "eval.json": "application/json", "eval-samples.jsonl": "text/plain", "eval-status.json": "application/json",
            "lm-eval.log": "text/plain"}
DASHBOARD: web.AppKey[Dashboard] = web.AppKey("dashboard")
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "X-Frame-Options": "DENY"}


@lru_cache(maxsize=1)
def _plotly_js() -> bytes:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs()).encode("utf-8")


class Dashboard:
    """State shared by the handlers: the results root and one query-only store connection."""

    def __init__(self, root: str | Path, *, gpus_per_node: int | None = None, ingest: bool = True,
                 store: str | None = None):
        from infx.results.store import url as store_url

        self.results = ResultsDir(root)
        self.root = self.results.root.resolve()
        where = store_url.resolve(store, self.root)
        if ingest:
            with Store(where) as st:
                st.ingest_dir(self.root)
        self.store = Store(where)
        self.store.set_query_only()
        self.gpus_per_node = gpus_per_node
        self.lock = threading.Lock()
        self._views: dict[tuple[object, ...], tuple[Any, bytes]] = {}  # the main view per (runs, as of, store state)

    # pages ---------------------------------------------------------------------
    def index_html(self) -> str:
        from infx.report.html import CSS, _time

        with self.lock:
            rows = self.store.runs_overview()
        e = html.escape
        where = str(self.root) if self.store.kind == "sqlite" else self.store.name
        body = []
        official = next((r.run_id for r in rows if r.official), None)  # newest official run: the default baseline
        options = "".join(f'<option value="{e(r.run_id)}">{e(r.run_id)}</option>' for r in rows)
        base_options = "".join(f'<option value="{e(r.run_id)}"{" selected" if r.run_id == official else ""}>'
                               f"{e(r.run_id)}</option>" for r in rows)
        for run_id, is_official, started, pr_number, pr_branch, baseline, done, other in rows:
            kind = "official" if is_official else f"unofficial (PR #{pr_number or '?'} {e(pr_branch or '')})"
            overlay = (f' &middot; <a href="/runs/{e(run_id)}?baseline={e(baseline)}">vs {e(baseline)}</a>'
                       if baseline else "")
            body.append(f'<tr><td><a href="/runs/{e(run_id)}">{e(run_id)}</a>{overlay}</td><td>{kind}</td>'
                        f"<td>{_time(started)}</td><td class=num>{done}</td><td class=num>{other}</td></tr>")
        latest = ('<p><a href="/mainview">the main view</a> (every hardware on one chart per model and scenario) '
                  '&middot; <a href="/latest">the latest curves</a> (each from one run\'s snapshot)</p>')
        table = (latest + '<table id="runs-table"><tr><th>run</th><th>kind</th><th>started</th><th>measured</th>'
                 f'<th>failed / skipped</th></tr>{"".join(body)}</table>')
        form = (f'<form action="/overlay" method="get">Overlay run <select name="run">{options}</select> on baseline '
                f'<select name="baseline">{base_options}</select> <button type="submit">show</button></form>')
        return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>infx dashboard</title>'
                f"<style>{CSS}</style></head><body><main><h1>infx dashboard</h1>"
                f"<p>{len(rows)} run(s) in {e(where)}</p>{table}<h2>Overlay</h2>{form}</main></body></html>")

    def report_html(self, run_id: str | None, baseline: str | None, tier: str | None = None,
                    as_of: str | None = None) -> str:
        from infx.analysis.dataset import gpus_per_node_resolver
        from infx.analysis.view import load_view
        from infx.report.data import load_report_data
        from infx.report.html import render_report

        with self.lock:
            resolve = gpus_per_node_resolver(self.store, override=self.gpus_per_node)
            view = load_view(self.store, as_of, gpus_per_node=resolve) if run_id is None else None
            data = load_report_data(self.store, run_id, baseline, gpus_per_node=resolve, results_root=self.root,
                                    cost_tier=tier, view=view)
        nav = '<nav><a href="/">&larr; all runs</a></nav>'
        return render_report(data, plotly_js="/static/plotly.min.js", nav=nav, files_url="/files")

    def frontiers(self, as_of: str | None) -> dict[str, object]:
        """The latest curves (as of ``as_of``) with their snapshot runs and frontier points, as JSON."""
        from infx.analysis.dataset import gpus_per_node_resolver
        from infx.analysis.view import curves, load_view

        with self.lock:
            resolve = gpus_per_node_resolver(self.store, override=self.gpus_per_node)
            data = load_view(self.store, as_of, gpus_per_node=resolve)
        return {"view": data.view_id, "as_of": data.as_of.at, "runs": data.runs, "notes": data.notes,
                "curves": [c.model_dump(mode="json") for c in curves(data)]}

    def main_view(self, runs: tuple[str, ...], as_of: str | None) -> tuple[Any, bytes]:
        """The main view (infx.analysis.mainview) of ``runs`` or of the curves as of ``as_of``, and its JSON;
        computed once per store state (a run added to the store computes it again)."""
        from infx.analysis.mainview import load_main_view

        with self.lock:
            key = (runs, as_of, tuple(self.store.run_ids()))
            hit = self._views.get(key)
            if hit is None:
                view = load_main_view(self.store, runs=list(runs) or None, as_of=as_of,
                                      gpus_per_node=self.gpus_per_node)
                hit = (view, view.model_dump_json().encode())
                if len(self._views) > 16:
                    self._views.clear()
                self._views[key] = hit
        return hit

    def safe_file(self, tail: str) -> Path | None:
        """The file ``tail`` names inside RESULTS, or None when it is not a servable point file."""
        if not tail or "\\" in tail or "\x00" in tail:
            return None
        parts = tail.split("/")
        if any(p in ("", ".", "..") for p in parts):
            return None
        # exactly <run>/manifest.json or <run>/points/<point>/<file>
        manifest = len(parts) == 2 and parts[1] == MANIFEST
        if not manifest and (len(parts) != 4 or parts[1] != POINTS or parts[3] not in SERVABLE):
            return None
        try:
            check_name(parts[0], "run id")
            if not manifest:
                check_name(parts[2], "point id")
        except InfxError:
            return None
        path = (self.root / Path(*parts)).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            return None
        return path


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


def _host_allowed(host_header: str | None) -> bool:
    """On a loopback-bound dashboard only loopback Host headers are served (so a web page on
    another origin cannot reach it through DNS rebinding)."""
    if not host_header:
        return False
    name = host_header.rsplit(":", 1)[0] if not host_header.endswith("]") else host_header
    return name.lower() in LOOPBACK_NAMES


def _guard(loopback_only: bool) -> Middleware:
    """Loopback-only Host, GET and HEAD only, and the security headers on every answer (errors too)."""

    @web.middleware
    async def headers(request: web.Request, handler: Handler) -> web.StreamResponse:
        if loopback_only and not _host_allowed(request.headers.get("Host")):
            raise web.HTTPMisdirectedRequest(text="refused: this dashboard only answers to 127.0.0.1 / localhost",
                                             headers=SECURITY_HEADERS)
        if request.method not in ("GET", "HEAD"):
            raise web.HTTPMethodNotAllowed(request.method, ["GET", "HEAD"], headers=SECURITY_HEADERS)
        try:
            resp = await handler(request)
        except web.HTTPException as exc:
            for k, v in SECURITY_HEADERS.items():
                exc.headers.setdefault(k, v)
            raise
        for k, v in SECURITY_HEADERS.items():
            resp.headers.setdefault(k, v)
        return resp

    return headers


class _Handlers:
    """The dashboard's request handlers over one :class:`Dashboard`."""

    def __init__(self, dash: Dashboard) -> None:
        self.dash = dash

    async def index(self, request: web.Request) -> web.Response:
        text = await asyncio.get_running_loop().run_in_executor(None, self.dash.index_html)
        return web.Response(text=text, content_type="text/html")

    async def run_page(self, request: web.Request) -> web.Response:
        run_id = request.match_info["run_id"]
        baseline = request.query.get("baseline") or None
        try:
            check_name(run_id, "run id")
            if baseline is not None:
                check_name(baseline, "run id")
            tier = request.query.get("tier") or None  # cost table tier (infx.analysis.cost), read per request
            text = await asyncio.get_running_loop().run_in_executor(None, self.dash.report_html, run_id, baseline, tier)
        except InfxError as exc:
            raise web.HTTPNotFound(text=str(exc)) from None
        return web.Response(text=text, content_type="text/html")

    def _as_of(self, request: web.Request) -> str | None:
        value = request.query.get("as_of") or None
        if value is not None and (len(value) > 200 or any(ch in value for ch in "\x00/\\")):
            raise web.HTTPBadRequest(text="refused: as_of is a date (YYYY-MM-DD) or a run id")
        return value

    async def latest_page(self, request: web.Request) -> web.Response:
        as_of, baseline = self._as_of(request), request.query.get("baseline") or None
        try:
            if baseline is not None:
                check_name(baseline, "run id")
            text = await asyncio.get_running_loop().run_in_executor(None, self.dash.report_html, None, baseline,
                                                                    request.query.get("tier") or None, as_of)
        except InfxError as exc:
            raise web.HTTPNotFound(text=str(exc)) from None
        return web.Response(text=text, content_type="text/html")

    async def api_frontiers(self, request: web.Request) -> web.Response:
        as_of = self._as_of(request)
        try:
            body = await asyncio.get_running_loop().run_in_executor(None, self.dash.frontiers, as_of)
        except InfxError as exc:
            raise web.HTTPNotFound(text=str(exc)) from None
        return web.json_response(body)

    def _view_args(self, request: web.Request) -> tuple[tuple[str, ...], str | None]:
        runs = tuple(r for r in (request.query.get("runs") or "").split(",") if r)
        try:
            for r in runs:
                check_name(r, "run id")
        except InfxError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        return runs, self._as_of(request)

    async def main_view_of(self, request: web.Request) -> Any:
        runs, as_of = self._view_args(request)
        try:
            return await asyncio.get_running_loop().run_in_executor(None, self.dash.main_view, runs, as_of)
        except InfxError as exc:
            raise web.HTTPNotFound(text=str(exc)) from None

    async def main_view_page(self, request: web.Request) -> web.Response:
        from infx.report.html import CSS
        from infx.report.mainview import section

        body = section(api="/api", as_of_box=True)
        text = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>infx: main view</title>'
                f'<style>{CSS}</style><script defer src="/static/plotly.min.js"></script></head><body><main>'
                f'<nav><a href="/">&larr; all runs</a></nav><h1>Main view</h1>{body}</main></body></html>')
        return web.Response(text=text, content_type="text/html")

    async def api_main_view(self, request: web.Request) -> web.Response:
        _, body = await self.main_view_of(request)
        return web.Response(body=body, content_type="application/json")

    def _axes(self, request: web.Request, view: Any) -> tuple[str, str]:
        x, y = request.query.get("x", "interactivity"), request.query.get("y", "tput_gpu_total")
        try:
            view.metric(x)
            view.metric(y)
        except KeyError as exc:
            raise web.HTTPBadRequest(text=f"refused: unknown metric {exc}") from None
        return x, y

    async def api_main_view_csv(self, request: web.Request) -> web.Response:
        import csv
        import io

        from infx.analysis.mainview import csv_rows

        view, _ = await self.main_view_of(request)
        x, y = self._axes(request, view)
        chart = request.query.get("chart")
        rows = csv_rows(view, int(chart) if chart and chart.isdigit() else None, x, y)
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=["chart", "group", "hardware", "framework", "spec", "disagg", "run_id",
                                            "point_id", "parallelism", "conc", x, y, "on_envelope", "acceptance",
                                            "invalid"], lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        return web.Response(text=buf.getvalue(), content_type="text/csv")

    async def api_verdict(self, request: web.Request) -> web.Response:
        from infx.report.html import verdict_html

        view, _ = await self.main_view_of(request)
        x, y = self._axes(request, view)
        try:
            a, b = int(request.query.get("a", "")), int(request.query.get("b", ""))
        except ValueError:
            raise web.HTTPBadRequest(text="refused: a and b are curve numbers") from None
        if not (0 <= a < len(view.groups) and 0 <= b < len(view.groups)):
            raise web.HTTPBadRequest(text="refused: no such curve")
        text = await asyncio.get_running_loop().run_in_executor(None, verdict_html, view, a, b, x, y)
        return web.Response(text=text, content_type="text/html")

    async def api_history(self, request: web.Request) -> web.Response:
        from pydantic import ValidationError

        from infx.analysis.history import CurveSel, history

        q = request.query
        try:
            sel = CurveSel(model=q.get("model", ""), scenario=q.get("scenario", ""),
                           isl=int(q["isl"]) if q.get("isl") else None, osl=int(q["osl"]) if q.get("osl") else None,
                           precision=q.get("precision", ""), hardware=q.get("hardware", ""),
                           framework=q.get("framework", ""), spec=q.get("spec", "none"),
                           disagg=q.get("disagg", "") in ("1", "true", "True"))
            target = float(q.get("target", ""))
        except (ValueError, ValidationError):
            raise web.HTTPBadRequest(text="refused: model, scenario, precision, hardware, framework and a numeric "
                                          "target are needed") from None
        x, y = q.get("x", "interactivity"), q.get("y", "tput_gpu_total")

        def run() -> str:
            with self.dash.lock:
                return history(self.dash.store, sel, target, x=x, y=y,
                               gpus_per_node=self.dash.gpus_per_node).model_dump_json()
        try:
            body = await asyncio.get_running_loop().run_in_executor(None, run)
        except KeyError as exc:
            raise web.HTTPBadRequest(text=f"refused: unknown metric {exc}") from None
        return web.Response(text=body, content_type="application/json")

    async def api_reliability(self, request: web.Request) -> web.Response:
        from infx.analysis.history import reliability

        def run() -> list[dict[str, object]]:
            with self.dash.lock:
                return [r.model_dump(mode="json") for r in reliability(self.dash.store)]
        return web.json_response(await asyncio.get_running_loop().run_in_executor(None, run))

    async def overlay(self, request: web.Request) -> web.Response:
        run_id, baseline = request.query.get("run", ""), request.query.get("baseline", "")
        try:
            check_name(run_id, "run id")
            check_name(baseline, "run id")
        except InfxError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        raise web.HTTPFound(f"/runs/{run_id}?baseline={baseline}")

    async def files(self, request: web.Request) -> web.StreamResponse:
        path = self.dash.safe_file(request.match_info["tail"])
        if path is None:
            raise web.HTTPForbidden(text="refused: not a results file")
        resp = web.FileResponse(path)
        resp.content_type = SERVABLE.get(path.name, "application/json")
        return resp

    async def api_runs(self, request: web.Request) -> web.Response:
        def runs() -> list[dict[str, object]]:
            with self.dash.lock:
                overview = self.dash.store.runs_overview()
                overview.sort(key=lambda r: (-math.inf if r.started_at is None else r.started_at, r.run_id))
                return [{"run_id": r.run_id, "official": r.official, "started_at": r.started_at} for r in overview]
        return web.json_response(await asyncio.get_running_loop().run_in_executor(None, runs))

    async def plotly_js(self, request: web.Request) -> web.Response:
        return web.Response(body=_plotly_js(), content_type="application/javascript",
                            headers={"Cache-Control": "max-age=86400"})

    async def on_cleanup(self, app: web.Application) -> None:
        self.dash.store.close()


def make_app(root: str | Path, *, gpus_per_node: int | None = None, ingest: bool = True,
             loopback_only: bool = True, store: str | None = None) -> web.Application:
    """The dashboard application. ``loopback_only``: refuse requests whose Host is not a
    loopback name (set it False only when binding another address on purpose)."""
    dash = Dashboard(root, gpus_per_node=gpus_per_node, ingest=ingest, store=store)
    h = _Handlers(dash)
    app = web.Application(middlewares=[_guard(loopback_only)])
    routes = [
        ("/", h.index),
        ("/runs/{run_id}", h.run_page),
        ("/latest", h.latest_page),
        ("/api/frontiers", h.api_frontiers),
        ("/overlay", h.overlay),
        ("/mainview", h.main_view_page),
        ("/api/mainview", h.api_main_view),
        ("/api/mainview.csv", h.api_main_view_csv),
        ("/api/verdict", h.api_verdict),
        ("/api/history", h.api_history),
        ("/api/reliability", h.api_reliability),
        ("/files/{tail:.*}", h.files),
        ("/api/runs", h.api_runs),
        ("/static/plotly.min.js", h.plotly_js),
    ]
    for path, handler in routes:
        app.router.add_get(path, handler)
    app.on_cleanup.append(h.on_cleanup)
    app[DASHBOARD] = dash
    return app


class ServeRequest(BaseModel):
    """What ``infx serve`` is asked: the results directory (and store) to show, and where to listen."""

    model_config = ConfigDict(extra="forbid")

    results: Path | None = None  # None: the workspace's results/
    port: int = Field(8787, ge=0, le=65535)  # 0: any free port
    host: str = "127.0.0.1"  # loopback only
    gpus_per_node: int | None = Field(None, ge=1)
    store: str | None = None


def serve(root: str | Path, *, host: str, port: int, gpus_per_node: int | None = None,
          store: str | None = None) -> None:
    """Run the dashboard until interrupted; prints the URL once listening (port 0: any free port)."""
    shown = Path(root).resolve()

    async def main() -> None:
        loopback = host in ("127.0.0.1", "localhost", "::1")
        app = make_app(root, gpus_per_node=gpus_per_node, loopback_only=loopback, store=store)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except (OSError, OverflowError, ValueError) as exc:  # port in use, unknown host, port past 65535
            await runner.cleanup()
            reason = getattr(exc, "strerror", None) or str(exc)
            raise InfxError(Diagnostic(f"cannot listen on {host}:{port}: {reason}", path=("--host/--port",))) from None
        sockets = getattr(site._server, "sockets", None) or []  # the bound socket (port 0: the one chosen)
        actual = sockets[0].getsockname()[1] if sockets else port
        print(f"infx dashboard: http://{host}:{actual}/ (results {shown}; Ctrl-C to stop)",
              flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    _quiet_bad_requests()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())


class _BadRequestLine(logging.Filter):
    """aiohttp logs a malformed request (a 64 KB request line, garbage bytes) with its traceback: the
    client's fault, not the server's. Keep one line, without the traceback, in the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg, record.args = "bad request from a client: %s", (" ".join(str(exc).split())[:200],)
            record.exc_info = None
            record.exc_text = None
        return True


def _quiet_bad_requests() -> None:
    log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _BadRequestLine) for f in log.filters):
        log.addFilter(_BadRequestLine())
