// kuuki — a decision's card, shared by the playground and the operator dashboard: the
// same card for the same decision wherever it is shown. Plain JS, no framework; loaded
// before the page's own script, which calls cardEl(d, open, ctx).
"use strict";

/** Build an element: h("div", {class: "x", onclick: fn}, "text", child, …). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "style") el.style.cssText = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const CONV_INDEX = new Map(); // conversation id → its colour's index
// -- colours ------------------------------------------------------------------------------
function hashHue(text) {
  let x = 0;
  for (const ch of text) x = (x * 31 + ch.codePointAt(0)) >>> 0;
  return x % 360;
}
function personColour(name) {
  return `hsl(${hashHue(name)}, 55%, 45%)`;
}
function convColour(id) {
  if (!CONV_INDEX.has(id)) CONV_INDEX.set(id, CONV_INDEX.size);
  const hue = (CONV_INDEX.get(id) * 137.508 + 200) % 360;
  return `hsl(${hue}, 62%, 48%)`;
}
function convLabel(id) {
  if (!CONV_INDEX.has(id)) convColour(id);
  return `conv ${CONV_INDEX.get(id) + 1}`;
}
function avatar(name) {
  return h("span", { class: "avatar", style: `background:${personColour(name)}`, "aria-hidden": "true" },
    (name[0] || "?").toUpperCase());
}

// -- time ---------------------------------------------------------------------------------
const pad = (n) => String(n).padStart(2, "0");
function hms(iso) {
  const d = new Date(iso);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
function dayTime(iso) {
  const d = new Date(iso);
  return `${d.toLocaleDateString(undefined, { weekday: "short", month: "short", day: "numeric" })} ${hms(iso)}`;
}
/** '3 min ago', 'in 12 s', 'just now' (from ``now``, a Date). */
function relativeTime(iso, now) {
  const s = (new Date(iso) - now) / 1000;
  const a = Math.abs(s);
  if (a < 1) return "just now";
  const n = a < 60 ? `${Math.round(a)} s` : a < 3600 ? `${Math.floor(a / 60)} min`
    : a < 86400 ? `${Math.floor(a / 3600)} h ${Math.floor((a % 3600) / 60)} min`
      : `${Math.round(a / 86400)} day${Math.round(a / 86400) === 1 ? "" : "s"}`;
  return s > 0 ? `in ${n}` : `${n} ago`;
}
/** A decision's time in local time: the clock time on the day of ``now``, with the date
 * on any other day (and the year in another year), so a list across days reads in order. */
function whenText(iso, now) {
  const d = new Date(iso);
  if (d.toDateString() === now.toDateString()) return hms(iso);
  const opts = { month: "short", day: "numeric" };
  if (d.getFullYear() !== now.getFullYear()) opts.year = "numeric";
  return `${d.toLocaleDateString(undefined, opts)}, ${hms(iso)}`;
}
const STAGE_WORDS = {
  addressed: "addressed", local: "by its rules", llm: "by the LLM judge", filtered: "filtered",
  proactive: "proactive", error: "error",
};

// -- the card -----------------------------------------------------------------------------
/**
 * A decision's card. ``ctx``: {selected: seq | null, messageText(id), conversationOf(id),
 * showChannel: bool, onPrompt(d, call, i), now() → Date (the page's clock)} — what the page
 * around it knows.
 */
function cardEl(d, open, ctx) {
  const t = d.trace;
  const c = d.card;
  const now = ctx.now ? ctx.now() : new Date();
  const conv = (t.features && t.features.conversation) || ctx.conversationOf(d.after);
  const details = h("details", {
    class: `card${ctx.selected === d.seq ? " selected" : ""}${c.fallback ? " fallback" : ""}`,
    "data-seq": d.seq, "data-testid": "decision",
    style: `border-left-color:${conv ? convColour(conv) : "var(--line)"}`, open: open || ctx.selected === d.seq,
  },
  h("summary", {},
    h("div", { class: "headline" },
      h("span", { class: `action act-${d.action}`, "data-testid": "decision-action" }, d.action),
      d.emoji && !c.headline ? h("span", { class: "emoji" }, d.emoji) : null,  // the headline says it
      c.fallback ? h("span", { class: "warn", title: "the safe default ran: no text was posted", "aria-label": "fallback" }, "⚠") : null,
      h("span", { class: "reason", "data-testid": "decision-reason", title: c.reason || d.reason }, c.headline || d.reason),
    ),
    h("div", { class: "card-top" },
      h("time", { class: "badge", datetime: d.t, title: `${dayTime(d.t)} (${relativeTime(d.t, now)})`, "data-testid": "decision-time" }, whenText(d.t, now)),
      h("span", { class: "tag", title: "the part of the pipeline that decided" }, STAGE_WORDS[d.stage] || d.stage),
      h("span", { class: "score", title: "total score" }, `score ${Number(d.score).toFixed(0)}`),
      d.timer ? h("span", { class: "tag timer-tag", "data-testid": "timer-tag" }, "⏱ timer") : null,
      d.llm_calls ? h("span", { class: "tag" }, `${d.llm_calls} LLM call${d.llm_calls > 1 ? "s" : ""}`) : null,
      c.language ? h("span", { class: "tag", title: "the conversation's language", "data-testid": "decision-language" }, c.language) : null,
      conv ? h("span", { class: "conv", style: `background:${convColour(conv)}` }, convLabel(conv)) : null,
      ctx.showChannel ? h("span", { class: "badge" }, `#${d.channel}`) : null,
    ),
    h("div", { class: "card-msg" }, `${d.message_user || "?"}: ${d.message_text || ctx.messageText(d.after) || d.after}`),
  ),
  h("div", { class: "card-body" },
    rulesEl(t.contributions),
    addresseeEl(c.addressee),
    seatEl(c.seat),
    linesEl("What the judge saw", c.features, "features"),
    linesEl("The channel right after", c.state, "state"),
    callsEl(d, ctx.onPrompt),
    toolsEl(c.tools),
    guardEl(c.guard),
    c.steps.length ? h("section", {}, h("h3", {}, "Steps"), h("ol", { class: "steps" }, c.steps.map((x) => h("li", {}, x)))) : null,
    d.text ? h("section", {}, h("h3", {}, "Sent"), h("div", { class: "text" }, d.text)) : null,
    c.errors.length ? h("section", {}, h("h3", {}, "Errors"), h("ul", { class: "errors" }, c.errors.map((e) => h("li", {}, e)))) : null,
    rawEl("raw trace (JSON)", t),
  ));
  return h("li", {}, details);
}
function linesEl(title, lines, testid) {
  if (!lines || !lines.length) return null;
  return h("section", {}, h("h3", {}, title),
    h("ul", { class: "lines", "data-testid": `card-${testid}` }, lines.map((x) => h("li", {}, x))));
}
function toolsEl(lines) {
  if (!lines || !lines.length) return null;
  return h("section", {}, h("h3", {}, "Tool calls"),
    h("ul", { class: "lines tools", "data-testid": "card-tools" }, lines.map((x) => h("li", {
      class: /\): ok /.test(x) ? "good" : "bad",
    }, x))));
}
function guardEl(lines) {
  if (!lines || !lines.length) return null;
  return h("section", {}, h("h3", {}, "Output guard"),
    h("ul", { class: "lines guard", "data-testid": "card-guard" }, lines.map((x) => h("li", {
      class: / rejected|^fallback/.test(x) ? "bad" : "good",
    }, x))));
}
function rawEl(title, value) {
  if (value === null || value === undefined) return null;
  return h("details", { class: "raw" }, h("summary", {}, title),
    h("pre", {}, JSON.stringify(value, null, 2)));
}
function rulesEl(contributions) {
  if (!contributions.length) return h("section", {}, h("h3", {}, "Rules"), h("div", { class: "empty" }, "no rule contributed"));
  const max = Math.max(10, ...contributions.map((c) => Math.abs(c.points)));
  return h("section", {}, h("h3", {}, "Rule contributions"),
    h("div", { class: "rules", "data-testid": "rules" }, contributions.flatMap((c) => {
      const w = `${(Math.abs(c.points) / max) * 50}%`;
      return [
        h("div", { class: "rule", "data-testid": "rule" }, c.rule, c.detail ? h("small", {}, c.detail) : null),
        h("div", { class: "pts" }, (c.points > 0 ? "+" : "") + Number(c.points).toFixed(c.points % 1 ? 1 : 0)),
        h("div", { class: "bar" }, h("span", { class: c.points >= 0 ? "pos" : "neg", style: `width:${w}` })),
      ];
    })));
}
// The learned models (kuuki.explain.models words them): a bar per candidate addressee, one
// for the seat, and the features that weighed most below.
function shareRow(label, p, percent, cls, testid) {
  return [
    h("div", { class: `rule ${cls}`, "data-testid": testid }, label),
    h("div", { class: "pts" }, percent),
    h("div", { class: "bar" }, h("span", { class: "share", style: `width:${Math.max(0, Math.min(1, p)) * 100}%` })),
  ];
}
function modelNotes(notes) {
  return notes.length ? h("div", { class: "model-notes" }, notes.map((n) => h("div", {}, n))) : null;
}
function addresseeEl(a) {
  if (!a) return null;
  return h("section", { "data-testid": "card-addressee" }, h("h3", {}, "Who it is for"),
    h("div", { class: "rules" }, a.candidates.flatMap((x) => shareRow(
      x.label, x.p, x.percent, x.chosen ? "chosen" : "", "addressee-candidate"))),
    modelNotes([...a.notes, a.because].filter(Boolean)));
}
function seatEl(s) {
  if (!s) return null;
  return h("section", { "data-testid": "card-seat" }, h("h3", {}, "Would a member in its seat speak"),
    h("div", { class: "rules" }, shareRow("speaks now", s.p, s.percent, "", "seat-p")),
    modelNotes([s.short ? `short remark ${s.short}` : "", s.because].filter(Boolean)));
}
function callsEl(d, onPrompt) {
  const lines = d.card.calls;
  if (!lines.length) return null;
  return h("section", {}, h("h3", {}, "LLM calls"),
    h("ul", { class: "lines calls", "data-testid": "card-calls" }, lines.map((line, i) => h("li", {
      class: d.trace.llm_calls[i] && d.trace.llm_calls[i].outcome !== "ok" ? "bad" : null,
    },
    h("span", {}, line),
    h("button", { type: "button", class: "small ghost", onclick: () => onPrompt(d, d.trace.llm_calls[i], i) }, "prompt"),
    ))));
}
