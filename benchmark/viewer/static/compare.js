"use strict";
// Runs side by side: best-so-far curves on one chart, a summary table, each best solution's diff.
(() => {
  const {el, runHref, getJSON, num, poll, chart, line, diff, shortCost} = RB;
  const ids = [...document.querySelectorAll("#compared li")].map((li) => li.dataset.runId);
  let signature = "";

  // one x axis for all runs: the union of their experiment counts; each run's best so far carried forward
  function joined(runs) {
    const xs = [...new Set(runs.flatMap((r) => r.curve.map((p) => p.x)))].sort((a, b) => a - b);
    const series = runs.map((r) => {
      const last = new Map();
      for (const p of r.curve) if (p.best !== null) last.set(p.x, p.best);
      let carried = null;
      const seen = r.curve.length ? Math.max(...r.curve.map((p) => p.x)) : -1;
      return xs.map((x) => { if (last.has(x)) carried = last.get(x); return x <= seen ? carried : null; });
    });
    return [xs, ...series];
  }

  function label(r) { return `${r.row.agent} · seed ${r.row.seed} · ${r.row.id}`; }

  function render(d) {
    const notes = document.getElementById("notes");
    notes.textContent = "";
    for (const note of d.notes) notes.append(el("li", {text: note}));
    const metric = d.runs.length ? `${d.runs[0].row.metric} (${d.runs[0].row.direction || "?"} is better)` : "";
    document.getElementById("metric").textContent = metric;
    chart(document.getElementById("chart"), "experiments spent", d.runs.length ? d.runs[0].row.metric : "", joined(d.runs),
      d.runs.map((r, i) => line(label(r), i)));
    const table = document.getElementById("summary");
    table.textContent = "";
    const heads = ["run", "agent", "task", "seed", "LLM", "status", "experiments", "best val", "hidden test", "achievement", "cost"];
    table.append(el("tr", {}, ...heads.map((h) => el("th", {text: h}))));
    for (const r of d.runs.map((x) => x.row)) {
      table.append(el("tr", {}, el("td", {}, el("a", {href: runHref(r.id), text: r.id})), el("td", {text: r.agent}),
        el("td", {text: r.task}), el("td", {class: "num", text: String(r.seed ?? "–")}), el("td", {text: r.model}),
        el("td", {}, el("span", {class: `badge ${r.status}`, text: r.status})),
        el("td", {class: "num", text: `${r.experiments ?? "–"} / ${r.budget_experiments ?? "?"}`}),
        el("td", {class: "num", text: num(r.best_val)}), el("td", {class: "num", text: num(r.test)}),
        el("td", {class: "num", text: num(r.achievement, 3)}), el("td", {class: "num", text: shortCost(r.cost), title: r.cost})));
    }
    const diffs = document.getElementById("diffs");
    diffs.textContent = "";
    for (const r of d.runs) {
      const text = r.best_diff === null ? el("p", {class: "note", text: "(the run's folder does not keep the files of its baseline and best node)"})
        : r.best_diff === "" ? el("p", {class: "note", text: "(the best node is the baseline: nothing changed)"}) : diff(r.best_diff);
      diffs.append(el("div", {}, el("h3", {text: `${label(r)}: best node ${r.row.best_node || "–"}`}), text));
    }
  }

  poll(async () => {
    const query = new URLSearchParams();
    for (const id of ids) query.append("run", id);
    const d = await getJSON("/api/compare?" + query.toString());
    const now = JSON.stringify(d.runs.map((r) => [r.row.id, r.curve.length, r.row.status, r.row.best_node]));
    if (now !== signature) { signature = now; render(d); }
    return d.runs.some((r) => r.row.status === "running" || r.row.status === "unknown");
  });
})();
