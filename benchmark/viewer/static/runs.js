"use strict";
// The runs list: every run under the results folder, grouped by sweep or folder; filter, sort, pick to compare.
(() => {
  const {el, runHref, getJSON, num, ago, poll, shortCost} = RB;
  const body = document.querySelector("#runs tbody");
  const state = {rows: [], key: "updated_at", dir: -1, selected: new Set()};
  const filter = document.getElementById("filter");
  const statusFilter = document.getElementById("status-filter");
  const compare = document.getElementById("compare");

  const text = (r) => [r.id, r.agent, r.task, r.task_version, r.model, r.status, r.group, String(r.seed)]
    .join(" ").toLowerCase();

  function compareRows(a, b) {
    const x = a[state.key], y = b[state.key];
    if (x === y) return a.id < b.id ? -1 : 1;
    if (x === null || x === undefined || x === "") return 1;  // missing values last, either way
    if (y === null || y === undefined || y === "") return -1;
    return (x < y ? -1 : 1) * state.dir;
  }

  function cells(r) {
    const box = el("input", {type: "checkbox", "aria-label": "compare"});
    box.checked = state.selected.has(r.id);
    box.addEventListener("change", () => {
      box.checked ? state.selected.add(r.id) : state.selected.delete(r.id);
      compare.disabled = state.selected.size < 2;
    });
    const budget = r.budget_experiments === null ? "" : ` / ${r.budget_experiments}`;
    return [el("td", {}, box), el("td", {}, el("a", {href: runHref(r.id), text: r.agent})),
      el("td", {text: r.task}), el("td", {text: r.task_version}), el("td", {class: "num", text: String(r.seed ?? "–")}),
      el("td", {text: r.model}),
      el("td", {title: r.status_note || null}, el("span", {class: `badge ${r.status}`, text: r.status})),
      el("td", {class: "num", text: `${r.experiments ?? "–"}${budget}`}), el("td", {class: "num", text: num(r.best_val)}),
      el("td", {class: "num", text: num(r.test)}), el("td", {class: "num", text: num(r.achievement, 3)}),
      el("td", {class: "num", text: shortCost(r.cost), title: r.cost || null}), el("td", {text: ago(r.updated_at)})];
  }

  function render() {
    const needle = filter.value.trim().toLowerCase();
    const wanted = statusFilter.value;
    const shown = state.rows.filter((r) => (!needle || text(r).includes(needle)) && (!wanted || r.status === wanted));
    const groups = new Map();
    for (const r of shown.sort(compareRows)) {
      if (!groups.has(r.group)) groups.set(r.group, []);
      groups.get(r.group).push(r);
    }
    body.textContent = "";
    for (const name of [...groups.keys()].sort()) {
      body.append(el("tr", {class: "group"}, el("td", {colspan: 13, text: `${name} (${groups.get(name).length})`})));
      for (const r of groups.get(name)) body.append(el("tr", {"data-run-id": r.id}, ...cells(r)));
    }
    document.getElementById("count").textContent = `${shown.length} of ${state.rows.length} runs`;
    document.getElementById("empty").hidden = state.rows.length > 0;
    for (const th of document.querySelectorAll("th[data-key]")) {
      th.classList.toggle("sorted-up", th.dataset.key === state.key && state.dir > 0);
      th.classList.toggle("sorted-down", th.dataset.key === state.key && state.dir < 0);
    }
  }

  for (const th of document.querySelectorAll("th[data-key]")) {
    th.addEventListener("click", () => {
      state.dir = state.key === th.dataset.key ? -state.dir : 1;
      state.key = th.dataset.key;
      render();
    });
  }
  filter.addEventListener("input", render);
  statusFilter.addEventListener("change", render);
  compare.addEventListener("click", () => {
    const query = new URLSearchParams();
    for (const id of state.selected) query.append("run", id);
    window.location.href = "/compare?" + query.toString();
  });

  poll(async () => {
    const data = await getJSON("/api/runs");
    state.rows = data.runs;
    render();
    return true;
  }, 2.5);
})();
