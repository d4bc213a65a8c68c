// kuuki operator dashboard. Plain JS, no framework; charts are drawn as SVG here. The data
// comes from /api/overview (the store's aggregation) and /api/decisions; the decision cards
// are the playground's (shared cards.js).
"use strict";

const $ = (sel) => document.querySelector(sel);
const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#3b5bdb", "#0b8a7a", "#c28a00", "#c92a2a", "#7048e8", "#2b8a3e", "#d6336c"];
const D = { decisions: [], selected: null };
// On a host beyond loopback the server wants its token (kuuki.ops.server): opened as
// ?token=…, the page sends it with each request, and takes it out of the address bar.
const TOKEN = new URLSearchParams(location.search).get("token");
if (TOKEN) {
  history.replaceState(null, "", location.pathname);
  $("#metrics-link").href = `/metrics?token=${encodeURIComponent(TOKEN)}`;
}
const api = (path) => fetch(path, TOKEN ? { headers: { Authorization: `Bearer ${TOKEN}` } } : {});

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}
const fmt = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString(undefined, { maximumFractionDigits: 1 }));
const pct = (x) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)} %`);
const ms = (x) => (x === null || x === undefined ? "—" : x >= 1000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`);

/** A line chart: one line per series over the days; null values leave a gap. */
function lineChart(el, days, series, { unit = fmt } = {}) {
  const W = 600, H = 200, L = 44, R = 8, T = 8, B = 22;
  const values = series.flatMap((x) => x.values).filter((v) => v !== null && v !== undefined);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": series.map((x) => x.label).join(", ") });
  if (!days.length || !values.length) {
    svg.append(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty-chart" }, "nothing in this window yet"));
    el.replaceChildren(svg);
    return;
  }
  const max = Math.max(1, ...values);
  const x = (i) => L + (days.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (days.length - 1));
  const y = (v) => T + (H - T - B) * (1 - v / max);
  for (const f of [0, 0.5, 1]) {
    svg.append(s("line", { x1: L, x2: W - R, y1: y(max * f), y2: y(max * f), class: "axis" }));
    svg.append(s("text", { x: L - 4, y: y(max * f) + 3, "text-anchor": "end" }, unit(max * f)));
  }
  const step = Math.max(1, Math.ceil(days.length / 7));
  days.forEach((d, i) => { if (i % step === 0) svg.append(s("text", { x: x(i), y: H - 6, "text-anchor": "middle" }, d.slice(5))); });
  series.forEach((ser, k) => {
    const colour = ser.colour || PALETTE[k % PALETTE.length];
    let path = "";
    ser.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      path += `${path && ser.values[i - 1] !== null && ser.values[i - 1] !== undefined ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    });
    svg.append(s("path", { d: path, fill: "none", stroke: colour, "stroke-width": 2, "data-series": ser.label }));
    ser.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      svg.append(s("circle", { cx: x(i), cy: y(v), r: 2.5, fill: colour }, s("title", {}, `${ser.label} ${days[i]}: ${unit(v)}`)));
    });
  });
  const legend = h("div", { class: "legend" }, series.map((ser, k) => h("span", {},
    h("i", { style: `background:${ser.colour || PALETTE[k % PALETTE.length]}` }), ser.label)));
  el.replaceChildren(svg, legend);
}

function renderTotals(t) {
  const items = [
    ["messages seen", fmt(t.messages)], ["bot replies", fmt(t.replies)], ["bot acks", fmt(t.acks)],
    ["reactions", fmt(t.reactions)], ["bot's share", pct(t.share)], ["asked / unasked", `${fmt(t.asked)} / ${fmt(t.unasked)}`],
    ["LLM calls", fmt(t.llm_calls)], ["tokens", fmt(t.tokens)], ["cost", t.cost === null || t.cost === undefined ? "no price set" : `$${Number(t.cost).toFixed(2)}`],
    ["guard rejections", fmt(t.guard_rejections)], ["fallbacks", fmt(t.fallbacks)],
    ["latency p50 / p95", `${ms(t.latency_p50_ms)} / ${ms(t.latency_p95_ms)}`],
  ];
  $("#totals").replaceChildren(...items.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
}

function renderChannels(rows) {
  const max = Math.max(0.01, ...rows.map((r) => r.share || 0));
  $("#channels").replaceChildren(h("table", { class: "per-channel" },
    h("thead", {}, h("tr", {}, ["channel", "messages", "replies", "acks", "reactions", "bot's share", "LLM calls"].map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.map((r) => h("tr", { "data-testid": "channel-row" },
      h("td", {}, r.name), h("td", {}, fmt(r.messages)), h("td", {}, fmt(r.replies)), h("td", {}, fmt(r.acks)),
      h("td", {}, fmt(r.reactions)),
      h("td", {}, pct(r.share), h("span", { class: "share-bar", style: `width:${((r.share || 0) / max) * 60}px` })),
      h("td", {}, fmt(r.llm_calls)))))));
  const sel = $("#channel");
  const current = sel.value;
  const names = rows.filter((r) => r.selectable).map((r) => r.name);
  if (sel.options.length === 1) {
    for (const n of names) sel.append(h("option", { value: n }, `#${n}`));
    sel.value = current;
  }
}

async function loadOverview() {
  const q = new URLSearchParams({ window: $("#window").value });
  if ($("#channel").value) q.set("channel", $("#channel").value);
  const res = await api(`/api/overview?${q}`);
  const o = await res.json();
  renderTotals(o.totals);
  lineChart($("#chart-speech"), o.days, o.speech);
  lineChart($("#chart-llm"), o.days, o.llm.flatMap((m) => [
    { label: `${m.model} calls`, values: m.calls }, { label: `${m.model} tokens ÷ 100`, values: m.tokens.map((v) => (v === null ? null : v / 100)) },
  ]));
  lineChart($("#chart-latency"), o.days, [
    { label: "p50", values: o.latency.p50 }, { label: "p95", values: o.latency.p95, colour: "#c92a2a" },
  ], { unit: ms });
  renderChannels(o.channels);
}

function cardContext() {
  return {
    selected: D.selected, messageText: () => null, conversationOf: () => null, showChannel: true,
    onPrompt: (d, call) => alert(call.prompt || "the prompt was not kept"),
  };
}
function renderDecisions(list, note) {
  $("#decisions").replaceChildren(...list.map((d, i) => cardEl(d, i === 0 && D.selected !== null, cardContext())));
  $("#decisions-note").textContent = note || "";
}
async function loadDecisions() {
  const res = await api("/api/decisions");
  const data = await res.json();
  const hidden = data.hidden ? `${data.hidden} more in direct messages${data.show_private ? "" : " or private channels"}, counted above but not shown here.` : "";
  renderDecisions(data.decisions, hidden);
}
async function search(event) {
  event.preventDefault();
  const id = $("#search-id").value.trim();
  if (!id) return loadDecisions();
  const res = await api(`/api/search?message_id=${encodeURIComponent(id)}`);
  const data = await res.json();
  D.selected = data.decisions.length ? data.decisions[0].seq : null;
  renderDecisions(data.decisions, data.note || `${data.decisions.length} decision(s) about ${id}`);
}

$("#window").addEventListener("change", loadOverview);
$("#channel").addEventListener("change", loadOverview);
$("#search").addEventListener("submit", search);
loadOverview();
loadDecisions();
