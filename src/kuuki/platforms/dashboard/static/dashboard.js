// kuuki operator dashboard. Plain JS, no framework. The data comes from /api/about (what this
// server reads), /api/overview (the store's aggregation) and /api/decisions; the charts are
// charts.js's, the decision cards the playground's (shared cards.js).
"use strict";

const $ = (sel) => document.querySelector(sel);
const D = { decisions: [], selected: null, overview: null };
// On a host beyond loopback the server wants its token (kuuki.ops.server): opened as
// ?token=…, the page sends it with each request, and takes it out of the address bar.
const TOKEN = new URLSearchParams(location.search).get("token");
if (TOKEN) {
  history.replaceState(null, "", location.pathname);
  $("#metrics-link").href = `/metrics?token=${encodeURIComponent(TOKEN)}`;
}
const api = (path) => fetch(path, TOKEN ? { headers: { Authorization: `Bearer ${TOKEN}` } } : {});

const fmt = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString(undefined, { maximumFractionDigits: 1 }));
const pct = (x) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)} %`);
const ms = (x) => (x === null || x === undefined ? "—" : msText(x));
/** '7d' → 'last 7 days', '1y' → 'last year' (the server's own words come with the data). */
function windowWords(w) {
  if (w === "all") return "everything in the store";
  const m = /^(\d+)([mhdwy])$/.exec(w);
  if (!m) return w;
  const unit = { m: "minute", h: "hour", d: "day", w: "week", y: "year" }[m[2]];
  return m[1] === "1" ? `last ${unit}` : `last ${m[1]} ${unit}s`;
}

function storeDates(data) {
  if (!data) return "the store holds nothing yet";
  const a = new Date(data.first), b = new Date(data.last);
  const day = (d) => d.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
  return day(a) === day(b) ? `data on ${day(a)}` : `data from ${day(a)} to ${day(b)}`;
}

function renderTotals(t) {
  const items = [
    ["messages seen", fmt(t.messages)], ["bot replies", fmt(t.replies)], ["bot acks", fmt(t.acks)],
    ["reactions", fmt(t.reactions)], ["bot's share", pct(t.share)], ["asked / unasked", `${fmt(t.asked)} / ${fmt(t.unasked)}`],
    ["LLM calls", fmt(t.llm_calls)], ["tokens", fmt(t.tokens)], ["cost", t.cost === null || t.cost === undefined ? "no price set" : `$${Number(t.cost).toFixed(2)}`],
    ["guard rejections", fmt(t.guard_rejections)], ["fallbacks", fmt(t.fallbacks)],
    ["answer when addressed, p50 / p95", t.latency_count ? `${ms(t.latency_p50_ms)} / ${ms(t.latency_p95_ms)}` : "no answer yet"],
  ];
  const would = (t.would_replies || 0) + (t.would_acks || 0) + (t.would_reactions || 0);
  if (would) {
    // Listen-only decisions: what the bot would have done beside what it did.
    items.splice(3, 0, ["would have (listening only)", `${fmt(t.would_replies)} replies · ${fmt(t.would_acks)} acks · ${fmt(t.would_reactions)} reactions`]);
  }
  $("#totals").replaceChildren(...items.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
}

function renderChannels(rows) {
  const max = Math.max(0.01, ...rows.map((r) => r.share || 0));
  $("#channels").replaceChildren(rows.length ? h("table", { class: "per-channel" },
    h("thead", {}, h("tr", {}, ["channel", "messages", "replies", "acks", "reactions", "would have", "bot's share", "LLM calls"].map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.map((r) => h("tr", { "data-testid": "channel-row" },
      h("td", {}, r.selectable ? `#${r.name}` : r.name), h("td", {}, fmt(r.messages)), h("td", {}, fmt(r.replies)), h("td", {}, fmt(r.acks)),
      h("td", {}, fmt(r.reactions)),
      h("td", { title: "listening only: what the bot would have done (replies / acks / reactions); nothing was sent" }, r.would ? `${fmt(r.would_replies)} / ${fmt(r.would_acks)} / ${fmt(r.would_reactions)}` : "—"),
      h("td", {}, pct(r.share), h("span", { class: "share-bar", style: `width:${((r.share || 0) / max) * 60}px` })),
      h("td", {}, fmt(r.llm_calls)))))) : h("p", { class: "empty" }, "no channel had messages in this window"));
  const sel = $("#channel");
  const current = sel.value;
  if (sel.options.length === 1) {
    for (const r of rows.filter((x) => x.selectable)) sel.append(h("option", { value: r.name }, `#${r.name}`));
    sel.value = current;
  }
}

function renderReach(o) {
  const box = $("#reach");
  box.hidden = !o.reach;
  if (o.reach) {
    $("#reach-text").textContent = o.reach.text.charAt(0).toUpperCase() + o.reach.text.slice(1) + ".";
    $("#reach-show").dataset.window = o.reach.window;
  }
}

function drawCharts() {
  const o = D.overview;
  if (!o) return;
  const hourly = o.step === "hour";
  const empty = o.data ? "nothing in this window" : "nothing recorded yet";
  document.querySelectorAll(".per").forEach((el) => { el.textContent = hourly ? "per hour" : "per UTC day"; });
  lineChart($("#chart-speech"), o.buckets, o.speech, { hourly, empty });
  lineChart($("#chart-llm"), o.buckets, o.llm.map((m) => ({ label: m.model, values: m.calls })), { hourly, empty: o.llm.length ? empty : "no LLM calls in this window" });
  lineChart($("#chart-tokens"), o.buckets, o.llm.map((m) => ({ label: m.model, values: m.tokens })), { hourly, empty: o.llm.length ? empty : "no LLM calls in this window" });
  lineChart($("#chart-latency"), o.buckets, [
    { label: "p50 (half the answers took less)", values: o.latency.p50 },
    { label: "p95", values: o.latency.p95, colour: "#c92a2a" },
  ], { hourly, integer: false, unit: msText, empty: "no answer to an addressed message in this window" });
  const t = o.totals;
  const waited = t.waited_count ? `${t.waited_count} more repl${t.waited_count === 1 ? "y" : "ies"} came after a deliberate wait (12–30 s for a burst to settle, 3 min before taking up an open question; median ${msText(t.waited_p50_ms)}), kept out of this chart.` : "";
  $("#latency-note").textContent = `From a message that addressed the bot to its answer. ${waited}`.trim();
}

async function loadAbout() {
  const res = await api("/api/about");
  const about = await res.json();
  $("#metrics-link").hidden = !about.metrics;
  const sel = $("#window");
  if (![...sel.options].some((o) => o.value === about.window)) {
    sel.append(h("option", { value: about.window }, windowWords(about.window)));
  }
  sel.value = about.window;
  D.about = about;
}

async function loadOverview() {
  const q = new URLSearchParams({ window: $("#window").value });
  if ($("#channel").value) q.set("channel", $("#channel").value);
  const res = await api(`/api/overview?${q}`);
  const o = await res.json();
  D.overview = o;
  const source = D.about && D.about.store ? `read-only · ${D.about.store} · ` : "read-only · ";
  $("#source").textContent = source + storeDates(o.data);
  $("#window-words").textContent = `· ${o.window_words || windowWords(o.window)}`;
  renderReach(o);
  renderTotals(o.totals);
  drawCharts();
  renderChannels(o.channels);
}

function cardContext() {
  return {
    selected: D.selected, messageText: () => null, conversationOf: () => null, showChannel: true,
    now: () => new Date(), onPrompt: (d, call) => alert(call.prompt || "the prompt was not kept"),
  };
}
function renderDecisions(list, note) {
  $("#decisions").replaceChildren(...list.map((d, i) => cardEl(d, i === 0 && D.selected !== null, cardContext())));
  $("#decisions-note").textContent = note || "";
}
async function loadDecisions() {
  const action = $("#action").value;
  const res = await api(`/api/decisions${action ? `?action=${encodeURIComponent(action)}` : ""}`);
  const data = await res.json();
  const hidden = data.hidden ? `${data.hidden} more in direct messages${data.show_private ? "" : " or private channels"}, counted above but not shown here.` : "";
  const none = data.decisions.length ? "" : `No ${action ? $("#action").selectedOptions[0].textContent : "decisions"} stored yet.`;
  renderDecisions(data.decisions, [none, hidden].filter(Boolean).join(" "));
  $("#decisions").dataset.action = action || "all";  // what the list shows now
}
async function search(event) {
  event.preventDefault();
  const id = $("#search-id").value.trim();
  if (!id) return loadDecisions();
  const res = await api(`/api/search?message_id=${encodeURIComponent(id)}`);
  const data = await res.json();
  D.selected = data.decisions.length ? data.decisions[0].seq : null;
  const n = data.decisions.length;
  renderDecisions(data.decisions, data.note || `${n} decision${n === 1 ? "" : "s"} about ${id}`);
}

let resizing = null;
window.addEventListener("resize", () => { clearTimeout(resizing); resizing = setTimeout(drawCharts, 150); });
$("#window").addEventListener("change", loadOverview);
$("#channel").addEventListener("change", loadOverview);
$("#action").addEventListener("change", loadDecisions);
$("#reach-show").addEventListener("click", (ev) => { $("#window").value = ev.target.dataset.window; loadOverview(); });
$("#search").addEventListener("submit", search);
loadAbout().then(loadOverview);
loadDecisions();
