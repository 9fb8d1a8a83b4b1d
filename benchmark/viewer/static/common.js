"use strict";
// researchbench view: what the pages share. Run data is hostile text: it enters the document only as text
// (textContent, append of strings), never as markup, and links are built from run ids by encoding each part.
const RB = (() => {
  const pollMs = Number(document.body.dataset.pollMs) || 2000;
  const palette = ["#0b5cad", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207", "#be185d"];

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
      else node.setAttribute(key, String(value));
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  function runPath(id) { return id.split("/").map(encodeURIComponent).join("/"); }
  function runHref(id) { return "/run/" + runPath(id); }

  async function getJSON(url) {
    const response = await fetch(url, {credentials: "same-origin", cache: "no-store"});
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return response.json();
  }

  function num(value, digits = 4) {
    if (value === null || value === undefined || Number.isNaN(value)) return "–";
    return Math.abs(value) >= 1e5 || (Math.abs(value) < 1e-3 && value !== 0)
      ? value.toExponential(digits - 1) : String(Number(value.toPrecision(digits)));
  }

  function seconds(value) {
    if (value === null || value === undefined) return "–";
    if (value < 120) return `${value.toFixed(1)} s`;
    if (value < 7200) return `${(value / 60).toFixed(1)} min`;
    return `${(value / 3600).toFixed(2)} h`;
  }

  function ago(epoch) {
    if (!epoch) return "–";
    return seconds(Math.max(0, Date.now() / 1000 - epoch)) + " ago";
  }

  // Repeat `task` every pollMs * factor while it returns true (it returns false once nothing can change).
  function poll(task, factor = 1) {
    const again = async () => {
      let more = true;
      try { more = await task(); } catch (err) { console.error(err); }
      if (more !== false) setTimeout(again, pollMs * factor);
    };
    again();
  }

  // A chart drawn by uPlot (static/vendor): x = experiments spent, one or more series of scores.
  function chart(box, xLabel, yLabel, data, series) {
    box.textContent = "";
    if (!data[0].length) { box.append(el("p", {class: "note", text: "(no scored node yet)"})); return null; }
    const width = Math.max(360, Math.min(box.clientWidth || 900, 1400));
    return new uPlot({
      width, height: 280, scales: {x: {time: false}},
      axes: [{label: xLabel, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]}, {label: yLabel, size: 70}],
      series: [{label: xLabel}, ...series], cursor: {drag: {x: false, y: false}},
    }, data, box);
  }

  function line(label, index) {
    return {label, stroke: palette[index % palette.length], width: 2, paths: uPlot.paths.stepped({align: 1}),
            points: {show: false}, spanGaps: true};
  }

  function dots(label) {
    return {label, stroke: "#7b8794", fill: "#7b8794", paths: () => null, points: {show: true, size: 6},
            spanGaps: false};
  }

  // A unified diff with its added/removed/hunk lines coloured; every line is text.
  function diff(text) {
    const box = el("pre", {class: "diff"});
    for (const row of text.split("\n")) {
      const cls = row.startsWith("+") && !row.startsWith("+++") ? "diff-add"
        : row.startsWith("-") && !row.startsWith("---") ? "diff-del" : row.startsWith("@@") ? "diff-hunk" : null;
      box.append(cls ? el("span", {class: cls, text: row}) : row, "\n");
    }
    return box;
  }

  // "$? (model not in litellm's price map)" -> "$?"; the whole text goes in the cell's title
  function shortCost(text) { return text ? text.split(" (")[0] : "–"; }

  return {shortCost, el, runPath, runHref, getJSON, num, seconds, ago, poll, chart, line, dots, diff, palette};
})();
