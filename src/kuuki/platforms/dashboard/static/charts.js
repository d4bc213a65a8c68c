// kuuki operator dashboard — line charts drawn as SVG at the size they are shown (one SVG
// unit is one CSS pixel, so the labels keep their 12 px on any screen), with round ticks
// (whole numbers for counts), hourly or daily points, and labels that stay inside the chart.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const PALETTE = ["#3b5bdb", "#0b8a7a", "#c28a00", "#c92a2a", "#7048e8", "#2b8a3e", "#d6336c"];
const FONT_PX = 12;
const CHAR_PX = 7; // the width of a digit at 12 px, for room at the left

function svgEl(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** Round ticks from 0 to at least ``max``: steps of 1, 2 or 5 (and 2.5 for non-counts) × 10^k. */
function niceTicks(max, { integer = false, count = 4 } = {}) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const steps = integer ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10];
  let step = steps.map((m) => m * mag).find((s) => s >= raw) || 10 * mag;
  if (integer) step = Math.max(1, Math.round(step));
  const top = Math.ceil(max / step - 1e-9) * step;
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

const countText = (v) => Number(v).toLocaleString();
/** Milliseconds as a person reads them: '850 ms', '1.5 s', '3 min'. */
function msText(v, step) {
  if (v === 0) return "0";
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 60_000) {
    const digits = step !== undefined && step < 1000 ? 1 : (v % 1000 ? 1 : 0);
    return `${(v / 1000).toFixed(digits)} s`;
  }
  const min = v / 60_000;
  return `${Number.isInteger(min) ? min : min.toFixed(1)} min`;
}

function bucketDate(iso, hourly) {
  const d = new Date(iso);
  // Days are UTC days (as `kuuki stats` counts them); hours are shown in local time.
  return hourly ? d.toLocaleDateString(undefined, { month: "short", day: "numeric" })
    : d.toLocaleDateString(undefined, { month: "short", day: "numeric", timeZone: "UTC" });
}
function bucketTime(iso) {
  const d = new Date(iso);
  return `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
}
/** What a point's tooltip calls its bucket: 'Jan 5, 10:00–11:00' or 'Jan 5 (UTC day)'. */
function bucketTitle(iso, hourly) {
  if (!hourly) return `${bucketDate(iso, false)} (UTC day)`;
  const end = new Date(new Date(iso).getTime() + 3600_000).toISOString();
  return `${bucketDate(iso, true)}, ${bucketTime(iso)}–${bucketTime(end)}`;
}

/**
 * A line chart in ``el``: one line per series over the buckets; null values leave a gap.
 * opts: {hourly, integer (whole-number ticks), unit(v, step) for the axis, empty (text)}.
 */
function lineChart(el, times, series, opts = {}) {
  const { hourly = false, integer = true, empty = "nothing in this window" } = opts;
  const unit = opts.unit || countText;
  const W = Math.max(260, Math.floor(el.clientWidth || 560));
  const H = 220;
  const values = series.flatMap((x) => x.values).filter((v) => v !== null && v !== undefined);
  const svg = svgEl("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": series.map((x) => x.label).join(", ") || "chart" });
  // Counts that are all zero: nothing happened (a latency of 0 ms is a figure, though).
  if (!times.length || !values.length || (integer && !values.some((v) => v !== 0))) {
    svg.append(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty-chart" }, empty));
    el.replaceChildren(svg);
    return;
  }
  const ticks = niceTicks(Math.max(...values), { integer });
  const step = ticks[1] - ticks[0];
  const top = ticks[ticks.length - 1];
  const labels = ticks.map((t) => unit(t, step));
  const L = 10 + Math.max(...labels.map((t) => t.length)) * CHAR_PX, R = 14, T = 10;
  const B = hourly ? 40 : 26;
  const x = (i) => L + (times.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (times.length - 1));
  const y = (v) => T + (H - T - B) * (1 - v / top);
  ticks.forEach((t, k) => {
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: y(t), y2: y(t), class: k ? "grid" : "axis" }));
    svg.append(svgEl("text", { x: L - 6, y: y(t) + FONT_PX / 3, "text-anchor": "end", class: "y" }, labels[k]));
  });
  xLabels(svg, times, x, H, B, hourly, W - L - R);
  series.forEach((ser, k) => {
    const colour = ser.colour || PALETTE[k % PALETTE.length];
    let path = "";
    ser.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      const prev = ser.values[i - 1];
      path += `${path && prev !== null && prev !== undefined ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    });
    svg.append(svgEl("path", { d: path, fill: "none", stroke: colour, "stroke-width": 2, "data-series": ser.label }));
    ser.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      svg.append(svgEl("circle", { cx: x(i), cy: y(v), r: times.length > 60 ? 1.5 : 3, fill: colour },
        svgEl("title", {}, `${ser.label}, ${bucketTitle(times[i], hourly)}: ${unit(v)}`)));
    });
  });
  const legend = h("div", { class: "legend" }, series.map((ser, k) => h("span", {},
    h("i", { style: `background:${ser.colour || PALETTE[k % PALETTE.length]}` }), ser.label)));
  el.replaceChildren(svg, legend);
}

/** The x labels: as many as fit 70 px apart; hours on one line and the day under it where it
 * changes; the first label starts at its point and the last ends at it, so none is cut. */
function xLabels(svg, times, x, H, B, hourly, width) {
  const room = Math.max(1, Math.floor(width / 70));
  let every = Math.max(1, Math.ceil(times.length / room));
  if (hourly) every = [1, 2, 3, 4, 6, 12, 24].find((n) => n >= every) || 24;
  let lastDay = "";
  times.forEach((iso, i) => {
    if (i % every !== 0 && i !== times.length - 1) return;
    if (i === times.length - 1 && i % every !== 0 && times.length > 1 && x(i) - x(i - (i % every)) < 60) return;
    const anchor = times.length === 1 ? "middle" : i === 0 ? "start" : i === times.length - 1 ? "end" : "middle";
    const main = hourly ? bucketTime(iso) : bucketDate(iso, false);
    svg.append(svgEl("text", { x: x(i), y: H - B + 18, "text-anchor": anchor, class: "x" }, main));
    const day = bucketDate(iso, true);
    if (hourly && day !== lastDay) {
      svg.append(svgEl("text", { x: x(i), y: H - B + 34, "text-anchor": anchor, class: "x day" }, day));
      lastDay = day;
    }
  });
}
