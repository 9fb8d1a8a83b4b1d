"""Self-contained static HTML: a comparison page (tables, plots, CIs) and one page per run (the search
tree, every node's plan, analysis, diff, metrics, output, prompts and replies, the best solution).

Pages open offline from disk: styles inline, plots as data: URIs, no scripts at all. Everything shown
comes from runs of hostile agent code, so every string is made inert (no NUL, ESC or other control
characters, benchmark/common/inert_text.py) and HTML-escaped, and a Content-Security-Policy
forbids scripts and remote loads outright, so even a missed escape could not run code or phone home.
"""

from __future__ import annotations

import base64
import html
import json
import math
from typing import TYPE_CHECKING, Any

from researchbench.benchmark.common.inert_text import inert, map_text
from researchbench.benchmark.common.safefs import safe_relpath
from researchbench.benchmark.llm.accounting import OFFLINE_LABEL, cost_text
from researchbench.benchmark.records.journal import Node
from researchbench.benchmark.scoring.runs import RunRecord

if TYPE_CHECKING:
    import pandas as pd

TEXT_LIMIT = 20_000  # characters of one blob shown inline
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:12px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}
th{background:#f3f4f6}td:first-child,th:first-child{text-align:left}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:420px;white-space:pre-wrap;word-break:break-all;font-size:12px}
details{margin:4px 0 4px 0;border:1px solid #e2e4e8;border-radius:4px;padding:4px 8px}summary{cursor:pointer}
.ok{color:#116329}.buggy{color:#b3261e}.edit_failed,.no_op,.agent_failed{color:#8a6d00}.note{color:#555}
ul.tree{list-style:none;padding-left:18px;border-left:1px dotted #bbb}.best{font-weight:bold;background:#fff3bf}
img{max-width:100%;border:1px solid #eee}.wrap{overflow-x:auto}
"""


def esc(value: Any) -> str:
    return html.escape(inert(value), quote=True)


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def pre(text: str, limit: int = TEXT_LIMIT) -> str:
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters not shown)"
    return f"<pre>{esc(text)}</pre>"


def table(df: pd.DataFrame, index: bool = False) -> str:
    # text cells and labels made inert; floats in mixed columns (a domain score or "incomplete") formatted
    df = map_text(df, lambda v: f"{v:.4g}" if isinstance(v, float) and math.isfinite(v)
                  else inert(v) if isinstance(v, str) else v)
    return "<div class='wrap'>" + df.to_html(index=index, escape=True, na_rep="–", float_format=lambda v: f"{v:.4g}",
                                             border=0) + "</div>"


def img(png: bytes, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


# ----------------------------------------------------------------------------- comparison page
def comparison_html(title: str, notes: list[str], sections: list[tuple[str, str, pd.DataFrame | None]],
                    plots: list[tuple[str, bytes]], run_links: list[tuple[str, str]]) -> str:
    """sections: (heading, explanation, table); run_links: (label, relative href)."""
    body = [f"<h1>{esc(title)}</h1>"]
    body += [f'<p class="note">{esc(n)}</p>' for n in notes]
    for heading, why, df in sections:
        body.append(f"<h2>{esc(heading)}</h2><p class='note'>{esc(why)}</p>")
        body.append(table(df, index=df.index.name is not None or df.index.dtype != "int64")
                    if df is not None and len(df) else "<p class='note'>(nothing to show)</p>")
    if plots:
        body.append("<h2>Plots</h2>")
        body += [f"<h3>{esc(name)}</h3>{img(png, name)}" for name, png in plots]
    body.append("<h2>Runs</h2><ul>")
    body += [f'<li><a href="{esc(href)}">{esc(label)}</a></li>' for label, href in run_links]
    body.append("</ul>")
    return page(title, "\n".join(body))


# ----------------------------------------------------------------------------- run page
def _curve_svg(run: RunRecord) -> str:
    """The run's best-so-far chart with its axes, drawn by matplotlib (benchmark.scoring.plots); a run's own
    page written where the metrics extra is not installed says how to get it."""
    try:
        from researchbench.benchmark.scoring.plots import run_curve_svg

        return run_curve_svg(run)
    except ImportError:
        return "<p class='note'>(the chart needs matplotlib: pip install -c requirements/lock.txt -e '.[metrics]')</p>"


def _tree(run: RunRecord) -> str:
    ids = {n.id for n in run.nodes}
    children: dict[str, list[Node]] = {}
    roots = []
    for node in run.nodes:
        parent = node.parents[0] if node.parents and node.parents[0] in ids else None
        (children.setdefault(parent, []) if parent else roots).append(node)
    best = run.best.id if run.best else None

    out: list[str] = ["<ul class='tree'>"]
    stack: list[tuple[Node | None, bool]] = [(r, True) for r in reversed(roots)]
    while stack:  # iterative: a debug chain thousands of nodes deep must not hit the recursion limit
        node, entering = stack.pop()
        if not entering:
            out.append("</ul></li>")
            continue
        score = f" {esc(run.metric.name)}={_fmt(node.primary)}" if node.primary is not None else ""
        cls = "best" if node.id == best else ""
        out.append(f"<li><span class='{cls}'><a href='#node-{esc(node.id)}'>{esc(node.id)}</a> {esc(node.operator)} "
                   f"<span class='{esc(node.status)}'>{esc(node.status)}</span>{score}{' ← best' if cls else ''}</span>")
        kids = children.get(node.id, [])
        if kids:
            out.append("<ul class='tree'>")
            stack.append((node, False))
            stack.extend((k, True) for k in reversed(kids))
        else:
            out.append("</li>")
    out.append("</ul>")
    return "".join(out)


def _messages(run: RunRecord, digest: str) -> str:
    raw = run.text(digest, limit=4 * TEXT_LIMIT)
    try:
        messages = json.loads(raw)
        return "".join(f"<h4>{esc(m.get('role', '?'))}</h4>{pre(str(m.get('content', '')))}" for m in messages
                       if isinstance(m, dict))
    except (ValueError, TypeError, AttributeError):
        return pre(raw)


def _node(run: RunRecord, node: Node) -> str:
    parts = [f"<details id='node-{esc(node.id)}'><summary><b>{esc(node.id)}</b> {esc(node.operator)} ← "
             f"{esc(', '.join(node.parents) or '-')} · <span class='{esc(node.status)}'>{esc(node.status)}</span>"
             f" · {esc(run.metric.name)} {esc(_fmt(node.primary))} · {node.seconds:.1f}s</summary>"]
    for label, text in (("Plan", node.plan), ("Analysis", node.analysis), ("Analysis error", node.analysis_error),
                        ("Feedback", node.feedback), ("Bug", node.bug_reason)):
        if text:
            parts.append(f"<h4>{label}</h4>{pre(str(text))}")
    if node.metrics:
        parts.append(f"<h4>Metrics</h4>{pre(json.dumps(node.metrics, indent=1, default=str))}")
    if node.executed:
        parts.append(f"<h4>Exit</h4><p>exit code {esc(node.exit_code)}{' (timed out)' if node.timed_out else ''}</p>")
    for label, digest in (("Diff", node.diff), ("stdout", node.stdout), ("stderr", node.stderr)):
        text = run.text(digest, limit=TEXT_LIMIT)
        if text:
            parts.append(f"<h4>{label}</h4>{pre(text)}")
    for i, call in enumerate(node.llm_calls if isinstance(node.llm_calls, list) else []):
        if not isinstance(call, dict):
            continue
        head = (f"LLM call {i + 1}: {call.get('operator', '')} {call.get('purpose', '')} · {call.get('model', '')} · "
                f"{call.get('prompt_tokens', 0)}+{call.get('completion_tokens', 0)} tokens · "
                f"{_call_cost(call)}"
                + (f" · error: {call.get('error')}" if call.get("error") else ""))
        parts.append(f"<details><summary>{esc(head)}</summary><h4>Prompt</h4>{_messages(run, call.get('messages', ''))}"
                     f"<h4>Response</h4>{pre(run.text(call.get('response', ''), limit=TEXT_LIMIT))}</details>")
    parts.append("</details>")
    return "".join(parts)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _call_cost(call: dict) -> str:
    """One journaled call's cost: a recorded figure is a number only when it is one (journals are agent-run)."""
    usd = call.get("usd")
    usd = float(usd) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else None
    if call.get("offline") is True:
        return f"$0 {OFFLINE_LABEL}"
    return (f"${usd:.6g}" if usd is not None else "$?") + (" (cache hit)" if call.get("cached") is True else "")


def run_html(run: RunRecord) -> str:
    s = run.summary
    best = run.best
    rows = "".join(f"<tr><td>{esc(label)}</td><td>{esc(_fmt(run.score(key, 'val')))}</td>"
                   f"<td>{esc(_fmt(run.score(key, 'test')))}</td></tr>"
                   for key, label in (("baseline", "baseline"), ("best", f"best ({best.id if best else '-'})")))
    used = s.budget.used
    cost = cost_text(used.usd, used.offline_llm, _count(used.unknown_cost_calls)) if used else cost_text(None)
    body = [f"<h1>{esc(run.agent)} on {esc(run.task)}, seed {esc(run.seed)}</h1>",
            f"<p class='note'>{esc(run.metric.name)} ({esc(run.metric.direction)} is better) · status {esc(s.status)}"
            f" · budget {esc(run.budget_label)} · stopped: {esc(s.stop_reason)} · {len(run.experiments)} experiments,"
            f" {len(run.nodes)} nodes · {esc(cost)} · {esc(used.tokens if used else None)} tokens · {esc(run.run_dir)}</p>",
            f"<table><tr><th></th><th>val</th><th>hidden test</th></tr>{rows}</table>", "<h2>Best validation score so far</h2>", _curve_svg(run),
            "<h2>Search tree</h2>", _tree(run), "<h2>Nodes</h2>"]
    body += [_node(run, n) for n in run.nodes]
    body.append("<h2>Best solution</h2>")
    if best is None:
        body.append("<p class='note'>(no valid node)</p>")
    else:
        body.append(f"<p class='note'>node {esc(best.id)}; also exported as best_solution/ in the run directory</p>")
        body += [f"<h3>{esc(rel)}{'' if safe_relpath(rel) else ' (not exported: the path leaves the folder)'}</h3>"
                 f"{pre(text, 4 * TEXT_LIMIT)}" for rel, text in run.files(best).items()]
    return page(f"{run.agent} / {run.task} / seed {run.seed}", "\n".join(body))
