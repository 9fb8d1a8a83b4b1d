"use strict";
// One run, live: header numbers, the best-so-far chart and the search tree, polled while the run goes on; a
// node opens in full (plan, diff, output, metrics, prompts and replies) when clicked.
(() => {
  const {el, runPath, getJSON, num, seconds, ago, poll, chart, line, dots, diff} = RB;
  const runId = document.body.dataset.runId;
  const state = {data: null, signature: "", selected: null, selectedPending: false};

  function fact(label, value) { return el("div", {}, el("span", {text: label}), value); }

  function renderFacts(d) {
    const r = d.row, lim = d.limits || {}, used = d.used || {};
    const status = document.getElementById("status");
    status.textContent = r.status;
    status.className = `badge ${r.status}`;
    const clock = d.clock === "cpu" ? "CPU" : "wall";
    const facts = document.getElementById("facts");
    facts.textContent = "";
    facts.append(
      fact("experiments", `${r.experiments ?? "–"} of ${lim.experiments ?? "?"}`),
      fact("nodes", `${r.nodes} finished, ${r.in_flight} in flight`),
      fact(`compute (${clock})`, `${num(used.compute_hours, 3)} h of ${lim.compute_hours ?? "?"} h`),
      fact("step limit", lim.step_timeout_s === undefined ? "–" : `${lim.step_timeout_s} s (${clock})`),
      fact("cost", r.cost || "–"), fact("tokens", String(used.tokens ?? "–")),
      fact("wall", seconds(r.wall_seconds)),
      fact(`best val ${r.metric} (${r.direction || "?"} is better)`, `${num(r.best_val)}${r.best_node ? ` (node ${r.best_node})` : ""}`),
      fact("baseline val", num((d.baseline || {}).val)),
      fact("hidden test", num(r.test)), fact("achievement", num(r.achievement, 3)),
      fact("stopped", d.stop_reason || "–"), fact("updated", ago(r.updated_at)));
    const notes = document.getElementById("notes");
    notes.textContent = "";
    for (const note of d.notes) notes.append(el("li", {text: note}));
  }

  function renderChart(d) {
    const x = d.curve.map((p) => p.x), best = d.curve.map((p) => p.best), val = d.curve.map((p) => p.val);
    chart(document.getElementById("chart"), "experiments spent", d.row.metric || "validation score", [x, best, val],
      [line(`best so far (${d.row.direction || "?"} is better)`, 0), dots("node score")]);
  }

  function nodeButton(n, pending) {
    const best = n.id === state.data.row.best_node;
    const label = pending ? "in flight" : n.status;
    const score = !pending && n.primary !== null ? ` ${state.data.row.metric}=${num(n.primary)}` : "";
    const button = el("button", {type: "button", "data-node": n.id,
      class: [best ? "best" : "", n.id === state.selected ? "selected" : ""].join(" ").trim() || null},
    `${n.id} ${n.operator}`, el("span", {class: `status ${pending ? "pending" : n.status}`, text: label}),
    score + (best ? " ← best" : ""));
    button.title = n.plan_head || "";
    button.addEventListener("click", () => openNode(n.id, pending));
    return button;
  }

  function renderTree(d) {
    const all = d.nodes.map((n) => [n, false]).concat(d.pending.map((n) => [n, true]));
    const ids = new Set(all.map(([n]) => n.id));
    const children = new Map(), roots = [];
    for (const entry of all) {
      const parent = entry[0].parents && entry[0].parents.length && ids.has(entry[0].parents[0]) ? entry[0].parents[0] : null;
      if (parent === null) roots.push(entry);
      else { if (!children.has(parent)) children.set(parent, []); children.get(parent).push(entry); }
    }
    const top = el("ul", {class: "tree"});
    // iterative: a debug chain thousands of nodes deep must not exhaust the stack
    const stack = roots.slice().reverse().map((entry) => [entry, top]);
    while (stack.length) {
      const [[n, pending], list] = stack.pop();
      const item = el("li", {}, nodeButton(n, pending));
      list.append(item);
      const kids = children.get(n.id) || [];
      if (kids.length) {
        const sub = el("ul", {class: "tree"});
        item.append(sub);
        for (const kid of kids.slice().reverse()) stack.push([kid, sub]);
      }
    }
    const box = document.getElementById("tree");
    box.textContent = "";
    box.append(top);
    document.getElementById("tree-count").textContent = `(${d.nodes.length} nodes${d.pending.length ? `, ${d.pending.length} in flight` : ""})`;
  }

  function block(title, content) { return [el("h4", {text: title}), content]; }

  function timeLine(n) {
    const parts = [`${seconds(n.seconds)} wall`];
    if (n.cpu_seconds !== null) parts.push(`${seconds(n.cpu_seconds)} CPU`);
    if (n.limit_s !== null) parts.push(`limit ${seconds(n.limit_s)} (${n.limit_kind})`);
    if (n.wall_limit_s !== null && n.limit_kind === "cpu") parts.push(`wall backstop ${seconds(n.wall_limit_s)}`);
    if (n.timed_out) parts.push("TIMED OUT");
    return parts.join(" · ");
  }

  function renderNode(n) {
    const box = document.getElementById("node");
    box.textContent = "";
    box.append(el("h3", {}, `${n.id} ${n.operator} ← ${n.parents.join(", ") || "–"} `,
      el("span", {class: `badge ${n.status}`, text: n.status})));
    const facts = [`${state.data.row.metric} ${num(n.primary)}`];
    if (n.executed) facts.push(`exit code ${n.exit_code ?? "–"}`, timeLine(n));
    else facts.push("not executed (no experiment spent)");
    if (n.spent !== null) facts.push(`${n.spent} experiments spent by then`);
    box.append(el("p", {class: "muted", text: facts.join(" · ")}));
    for (const [label, text] of Object.entries(n.texts)) {
      if (text) box.append(...block(label, el("pre", {class: label.toLowerCase().replace(" ", "-"), text})));
    }
    const metrics = Object.entries(n.metrics);
    if (metrics.length) {
      const table = el("table", {class: "grid"}, el("tr", {}, el("th", {text: "metric"}), el("th", {text: "value"})));
      for (const [k, v] of metrics) table.append(el("tr", {}, el("td", {text: k}), el("td", {text: typeof v === "number" ? num(v, 6) : String(v)})));
      box.append(...block("Metrics", table));
    }
    if (n.files.length) box.append(...block("Files", el("p", {class: "muted", text: n.files.join(", ")})));
    const kept = (text) => text === null ? el("p", {class: "note", text: "(not kept in this run's folder)"}) : null;
    if (n.diff !== "") box.append(...block("Diff against its parent", kept(n.diff) || diff(n.diff)));
    for (const [label, key] of [["stdout", "stdout"], ["stderr", "stderr"]]) {
      if (n[key] !== "") box.append(...block(label, kept(n[key]) || el("pre", {class: key, text: n[key]})));
    }
    n.llm_calls.forEach((call, i) => {
      const h = call.head;
      const head = `LLM call ${i + 1}: ${h.operator || ""} ${h.purpose || ""} · ${h.model || ""} · ` +
        `${h.prompt_tokens ?? 0}+${h.completion_tokens ?? 0} tokens · ${call.cost}${h.error ? ` · error: ${h.error}` : ""}`;
      const details = el("details", {class: "llm-call"}, el("summary", {text: head}));
      details.append(el("h4", {text: "Prompt"}));
      if (call.messages === null) details.append(kept(null));
      else for (const m of call.messages) details.append(el("h4", {class: "muted", text: m.role}), el("pre", {text: m.content}));
      details.append(el("h4", {text: "Reply"}), call.response === null ? kept(null) : el("pre", {class: "reply", text: call.response}));
      box.append(details);
    });
    n.tool_calls.forEach((tool, i) => {
      const details = el("details", {}, el("summary", {text: `command ${i + 1}: ${tool.record.command || tool.record.kind || ""}`}));
      details.append(el("pre", {text: JSON.stringify(tool.record, null, 1)}));
      for (const key of ["stdout", "stderr"]) if (tool[key]) details.append(el("h4", {text: key}), el("pre", {text: tool[key]}));
      box.append(details);
    });
    if (n.transcript) box.append(...block("Transcript", el("pre", {text: n.transcript})));
  }

  async function openNode(id, pending) {
    state.selected = id;
    state.selectedPending = pending;
    for (const b of document.querySelectorAll("#tree button")) b.classList.toggle("selected", b.dataset.node === id);
    const box = document.getElementById("node");
    if (pending) {
      box.textContent = "";
      box.append(el("p", {class: "note", text: `${id} is in flight; it shows here in full once it finishes.`}));
      return;
    }
    renderNode(await getJSON(`/api/node/${encodeURIComponent(id)}/${runPath(runId)}`));
  }

  poll(async () => {
    const d = await getJSON(`/api/run/${runPath(runId)}`);
    state.data = d;
    renderFacts(d);
    const signature = JSON.stringify([d.nodes.map((n) => n.id), d.pending.map((n) => n.id), d.row.best_node]);
    if (signature !== state.signature) {
      state.signature = signature;
      renderChart(d);
      renderTree(d);
      if (state.selected && state.selectedPending && d.nodes.some((n) => n.id === state.selected)) openNode(state.selected, false);
    }
    return d.row.status === "running" || d.row.status === "unknown";
  });
})();
