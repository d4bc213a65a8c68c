// kuuki playground — the page. Plain JS, no framework, no build step.
// The server is the source of truth: it sends a full "state" on connect and then events;
// the page sends commands ({type: "say" | "add_participant" | "add_channel" | "jump" |
// "memory" | "stop_playback"}) over the same WebSocket.
"use strict";

const $ = (sel) => document.querySelector(sel);

const S = {
  ws: null,
  persona: { name: "Kuu", aliases: [] },
  participants: [],
  channels: [],
  messages: new Map(), // id → message view
  decisions: [], // oldest first
  me: "alice",
  channel: "general",
  typing: new Set(),
  memory: {}, // channel → snapshot
  unread: {},
  selected: null, // decision seq
  replyTo: null,
  tab: "trace",
  allChannels: false,
  retry: 0,
  model: null,
  judge: "",
  jump: null, // the jump under way, as the server reports it
  pending: new Map(), // message id → {kind: "settling" | "recheck", due}: a decision to come
};

// -- time ---------------------------------------------------------------------------------
function duration(seconds) {
  if (seconds < 60) return `${Math.max(0, Math.round(seconds))} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
  return `${(seconds / 86400).toFixed(1)} days`;
}

// -- connection ---------------------------------------------------------------------------
function connect() {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${location.host}/ws`);
  S.ws = ws;
  ws.onopen = () => { S.retry = 0; $("#conn").hidden = true; };
  ws.onmessage = (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    const handler = HANDLERS[msg.type];
    if (handler) handler(msg);
  };
  ws.onclose = () => {
    $("#conn").hidden = false;
    S.retry = Math.min(S.retry + 1, 6);
    setTimeout(connect, 500 * S.retry);
  };
}
function send(obj) {
  if (!S.ws || S.ws.readyState !== WebSocket.OPEN) {
    toast("Not connected to the playground server.");
    return false;
  }
  S.ws.send(JSON.stringify(obj));
  return true;
}

const HANDLERS = {
  state(m) {
    S.persona = m.persona;
    S.participants = m.participants;
    S.channels = m.channels;
    S.messages = new Map(m.messages.map((x) => [x.id, x]));
    S.decisions = m.decisions;
    S.typing = new Set(m.typing);
    if (!S.participants.includes(S.me)) S.me = S.participants[0] || "alice";
    if (!S.channels.some((c) => c.id === S.channel)) S.channel = (S.channels[0] || {}).id || "general";
    S.judge = m.judge;
    renderModel(m.model);
    renderClock(m.clock);
    renderJump(m.jump);
    renderPlayback(m.playback);
    S.pending = pendingMap(m.pending || []);
    renderAll();
    send({ type: "memory", channel: S.channel });
  },
  message(m) {
    const msg = m.message;
    S.messages.set(msg.id, msg);
    if (msg.channel === S.channel) appendMessage(msg);
    else {
      S.unread[msg.channel] = (S.unread[msg.channel] || 0) + 1;
      renderChannels();
    }
  },
  edit(m) { S.messages.set(m.message.id, m.message); replaceMessage(m.message); },
  reaction(m) {
    const msg = S.messages.get(m.message_id);
    if (!msg) return;
    msg.reactions.push({ emoji: m.emoji, user: m.user });
    replaceMessage(msg);
  },
  decision(d) {
    S.decisions.push(d);
    if (S.decisions.length > 300) S.decisions.shift();
    const msg = S.messages.get(d.after);
    if (msg) { msg.decision = { action: d.action, seq: d.seq }; replaceMessage(msg); }
    if (S.allChannels || d.channel === S.channel) prependCard(d);
  },
  typing(m) {
    if (m.on) S.typing.add(m.channel); else S.typing.delete(m.channel);
    renderTyping();
  },
  clock(m) { renderClock(m); },
  pending(m) {
    const before = S.pending;
    S.pending = pendingMap(m.items);
    for (const id of new Set([...before.keys(), ...S.pending.keys()])) {
      const msg = S.messages.get(id);
      if (msg && msg.channel === S.channel) replaceMessage(msg);
    }
  },
  model(m) { renderModel(m); },
  jump(m) { renderJump(m); },
  conversations(m) {
    for (const [id, conv] of Object.entries(m.map)) {
      const msg = S.messages.get(id);
      if (msg) { msg.conversation = conv; if (msg.channel === S.channel) replaceMessage(msg); }
    }
  },
  memory(m) {
    S.memory[m.channel] = { ...m.memory, received: S.clockNow };
    if (m.channel === S.channel) renderMemory();
  },
  participants(m) { S.participants = m.participants; renderPeople(); },
  channels(m) { S.channels = m.channels; renderChannels(); },
  playback(m) { renderPlayback(m); },
  error(m) {
    toast(m.error);
    if (m.command === "jump" && S.jump && !S.jump.to) renderJump(null); // refused before it began
  },
};

// -- rendering: sidebar -------------------------------------------------------------------
function renderAll() {
  renderChannels();
  renderPeople();
  renderMessages();
  renderTyping();
  renderDecisions();
  renderMemory();
}
function renderChannels() {
  const list = $("#channels");
  list.replaceChildren(...S.channels.map((c) => h("li", {},
    h("button", {
      type: "button", "aria-current": c.id === S.channel ? "true" : "false",
      "data-channel": c.id, onclick: () => switchChannel(c.id),
    },
    h("span", {}, (c.visibility === "public" ? "# " : "🔒 ") + c.id),
    S.unread[c.id] ? h("span", { class: "unread" }, S.unread[c.id]) :
      (c.visibility !== "public" ? h("span", { class: "badge" }, c.visibility) : null)),
  )));
  $("#chat-title").textContent = (channelOf(S.channel).visibility === "public" ? "#" : "🔒 ") + S.channel;
  $("#text").placeholder = `Message #${S.channel} as ${S.me}`;
  $("#memory-channel").textContent = `#${S.channel}`;
}
function channelOf(id) {
  return S.channels.find((c) => c.id === id) || { id, visibility: "public" };
}
function renderPeople() {
  const people = S.participants.map((p) => h("li", {},
    h("button", { type: "button", "aria-pressed": p === S.me ? "true" : "false", onclick: () => setSpeaker(p) },
      h("span", { class: "who" }, avatar(p), p))));
  $("#people").replaceChildren(...people);
  $("#speakers").replaceChildren(...S.participants.map((p) =>
    h("button", {
      type: "button", class: "speaker", role: "radio", "aria-checked": p === S.me ? "true" : "false",
      "data-speaker": p, onclick: () => setSpeaker(p),
    }, avatar(p), p)));
  $("#text").placeholder = `Message #${S.channel} as ${S.me}`;
}
function setSpeaker(name) {
  S.me = name;
  renderPeople();
  $("#text").focus();
}
function switchChannel(id) {
  S.channel = id;
  S.unread[id] = 0;
  S.replyTo = null;
  renderReplyTo();
  renderChannels();
  renderMessages();
  renderTyping();
  renderDecisions();
  renderMemory();
  send({ type: "memory", channel: id });
}

// -- rendering: chat ----------------------------------------------------------------------
/** One wait per message: its decision to come before a later re-check. */
function pendingMap(items) {
  const map = new Map();
  for (const x of items) {
    const had = map.get(x.message_id);
    if (!had || (had.kind === "recheck" && x.kind === "settling")) map.set(x.message_id, x);
  }
  return map;
}
/** What is still to come for a message, counted down on the virtual clock. */
function pendingText(wait) {
  const left = Math.max(0, (new Date(wait.due) - new Date(S.clockNow)) / 1000);
  return wait.kind === "recheck"
    ? `↻ looks again in ${duration(left)} if nobody answers`
    : `⏳ decided in ${duration(left)}: waiting for the burst to settle`;
}
function pendingEl(m) {
  const wait = S.pending.get(m.id);
  if (!wait) return null;
  return h("span", {
    class: `pending-chip ${wait.kind}`, "data-testid": "pending", "data-kind": wait.kind,
    "data-due": wait.due, title: wait.kind === "recheck"
      ? "an open question: the bot looks at it again if nobody answers"
      : "a message not addressed to the bot is judged once the conversation pauses",
  }, pendingText(wait));
}
function messageEl(m) {
  const conv = m.conversation;
  const colour = conv ? convColour(conv) : null;
  const quoted = m.reply_to ? S.messages.get(m.reply_to) : null;
  const chip = m.decision ? h("button", {
    type: "button", class: `decision-chip act-${m.decision.action}`, title: "Show why",
    "data-testid": "decision-chip", onclick: () => showDecision(m.decision.seq),
  }, `→ ${m.decision.action}`) : null;
  return h("li", {
    class: `msg${m.bot ? " bot" : ""}${m.deleted ? " deleted" : ""}`,
    "data-id": m.id, "data-testid": m.bot ? "bot-message" : "message",
    style: colour ? `border-left-color:${colour}` : null,
  },
  h("div", { class: "msg-head" },
    h("span", { class: "who" }, avatar(m.user), h("span", { class: "name" }, m.user)),
    m.bot ? h("span", { class: "tag bot" }, m.kind === "ack" ? "bot · ack" : "bot") : null,
    m.other_bot ? h("span", { class: "tag" }, "other bot") : null,
    h("time", { datetime: m.t, title: dayTime(m.t) }, hms(m.t)),
    conv ? h("span", { class: "conv", style: `background:${colour}`, title: `conversation ${conv}` }, convLabel(conv)) : null,
    m.edited ? h("span", { class: "tag" }, "edited") : null,
    m.thread ? h("span", { class: "tag" }, "thread") : null,
    h("button", {
      type: "button", class: "msg-reply ghost", title: "Reply to this message",
      "aria-label": `Reply to ${m.user}`, onclick: () => setReplyTo(m.id),
    }, "↩"),
  ),
  quoted ? h("div", { class: "quote" }, `↩ ${quoted.user}: ${quoted.text}`) : null,
  h("div", { class: "text" }, m.text || (m.bot ? "(no text: generation is off)" : "")),
  (m.reactions.length || chip || S.pending.has(m.id)) ? h("div", { class: "msg-foot" },
    m.reactions.map((r) => h("span", { class: "reaction", title: `${r.user} reacted`, "data-testid": "reaction" }, r.emoji)),
    pendingEl(m), chip) : null,
  );
}
function renderMessages() {
  const list = $("#messages");
  const items = [...S.messages.values()].filter((m) => m.channel === S.channel);
  list.replaceChildren(...items.map(messageEl));
  if (!items.length) {
    list.append(h("li", { class: "day" },
      `Say something. Address the bot with @${S.persona.name} or its name — or just talk and see if it joins in.`));
  }
  list.scrollTop = list.scrollHeight;
}
function appendMessage(m) {
  const list = $("#messages");
  const near = atBottom(list);
  list.querySelector(".day")?.remove();
  list.append(messageEl(m));
  if (near || !m.bot) list.scrollTop = list.scrollHeight;
}
function atBottom(list) {
  return list.scrollHeight - list.scrollTop - list.clientHeight < 80;
}
function replaceMessage(m) {
  const old = $(`#messages [data-id="${CSS.escape(m.id)}"]`);
  if (!old) return;
  // A chip that appears or goes changes the message's height: a list that showed the
  // newest message keeps showing it, never half hidden behind the composer.
  const list = $("#messages");
  const stick = atBottom(list);
  old.replaceWith(messageEl(m));
  if (stick) list.scrollTop = list.scrollHeight;
}
function renderTyping() {
  const on = S.typing.has(S.channel);
  $("#typing").hidden = !on;
  $("#typing-text").textContent = `${S.persona.name} is typing…`;
}
function setReplyTo(id) {
  S.replyTo = id;
  renderReplyTo();
  $("#text").focus();
}
function renderReplyTo() {
  const m = S.replyTo ? S.messages.get(S.replyTo) : null;
  $("#reply-to").hidden = !m;
  if (m) $("#reply-to-text").textContent = `replying to ${m.user}: ${m.text.slice(0, 80)}`;
}

// -- rendering: decisions -----------------------------------------------------------------
function renderDecisions() {
  const list = $("#decisions");
  const items = S.decisions.filter((d) => S.allChannels || d.channel === S.channel);
  list.replaceChildren(...items.reverse().map((d, i) => cardEl(d, i === 0, cardContext())));
  $("#trace-empty").hidden = items.length > 0;
}
function prependCard(d) {
  const list = $("#decisions");
  list.querySelectorAll("details[open]").forEach((el) => { if (!el.classList.contains("selected")) el.open = false; });
  list.prepend(cardEl(d, true, cardContext()));
  $("#trace-empty").hidden = true;
  while (list.children.length > 300) list.lastChild.remove();
}
function cardContext() {
  return {
    now: () => new Date(S.clockNow || Date.now()),
    selected: S.selected,
    messageText: (id) => S.messages.get(id)?.text,
    conversationOf: (id) => S.messages.get(id)?.conversation,
    showChannel: S.allChannels,
    onPrompt: showPrompt,
  };
}
async function showPrompt(d, call, i) {
  let text = call.prompt;
  if (!text) {
    const res = await fetch(`/api/prompt?key=${encodeURIComponent(d.prompts[i])}`);
    text = await res.text();
  }
  $("#prompt-title").textContent = `${call.purpose} prompt for ${d.after} (${call.model})`;
  $("#prompt-text").textContent = text;
  $("#prompt-dialog").showModal();
}
function showDecision(seq) {
  S.selected = seq;
  const d = S.decisions.find((x) => x.seq === seq);
  if (d && d.channel !== S.channel && !S.allChannels) switchChannel(d.channel);
  selectTab("trace");
  renderDecisions();
  document.querySelectorAll(".msg.selected").forEach((el) => el.classList.remove("selected"));
  if (d) $(`#messages [data-id="${CSS.escape(d.after)}"]`)?.classList.add("selected");
  $(`#decisions [data-seq="${seq}"]`)?.scrollIntoView({ block: "nearest" });
}

// -- rendering: memory --------------------------------------------------------------------
function memSection(sec) {
  const body = sec.items.length
    ? h("ul", { class: "mem-items" }, sec.items.map((it) => h("li", {},
      h("div", { class: "mem-text" }, it.text),
      it.meta.map((m) => h("div", { class: "mem-meta" }, m)))))
    : (sec.empty ? h("p", { class: "none" }, sec.empty) : null);
  return h("section", { class: "mem-section", "data-section": sec.key },
    h("h3", {}, sec.title), body, sec.note ? h("p", { class: "mem-note" }, sec.note) : null);
}
function renderMemory() {
  const snap = S.memory[S.channel];
  const box = $("#memory");
  $("#memory-channel").textContent = `#${S.channel}` + (snap && snap.read_at ? ` · as of ${snap.read_at} (virtual time)` : "");
  if (!snap) { box.replaceChildren(h("p", { class: "empty" }, "Loading…")); return; }
  const parts = snap.sections.map(memSection);
  if (snap.error) parts.unshift(h("p", { class: "mem-error" }, `memory could not be read: ${snap.error}`));
  if (snap.visibility && snap.visibility !== "public") {
    parts.unshift(h("p", { class: "mem-note" }, `A ${snap.visibility} channel: it sees its own memories and what public channels share; nothing it holds is shown elsewhere.`));
  }
  parts.push(rawEl("raw snapshot (JSON)", snap.raw));
  box.replaceChildren(...parts.filter(Boolean));
}

// -- rendering: header --------------------------------------------------------------------
function renderModel(m) {
  if (!m) return;
  S.model = m;
  const p = S.persona;
  const loaded = m.state === "ready" && m.local && m.load_s != null ? ` (loaded in ${m.load_s.toFixed(1)} s)` : "";
  $("#persona").textContent = $("#persona").title =
    `bot: ${p.name}` + (p.aliases.length ? ` (${p.aliases.join(", ")})` : "") +
    ` · ${p.language} · model: ${m.name || "off"}${loaded} · judge: ${S.judge}`;
  const chip = $("#model-state");
  chip.hidden = !(m.state === "loading" || m.state === "failed");
  chip.className = `model-state ${m.state}`;
  chip.textContent = m.headline;
  chip.title = m.headline;
  $("#chat-hint").textContent = m.state === "loading"
    ? "the model is loading: what you say now is answered once it is ready" : "";
  const note = m.note;
  const dismissed = localStorage.getItem("kuuki.modelNote") === (m.name || "");
  $("#model-note").hidden = !note || dismissed;
  if (note) {
    $("#model-note-text").textContent = $("#model-note-text").title = note.text;
    $("#plug-in-lines").replaceChildren(...note.plug_in.flatMap((x) => [
      h("dt", {}, x.label), h("dd", {}, h("code", { "data-testid": "plug-in-line" }, x.line)),
    ]));
  }
}
function renderJump(j) {
  S.jump = j && j.active ? j : null;
  $(".jumps").classList.toggle("busy", !!S.jump);
  document.querySelectorAll("[data-jump]").forEach((b) => {
    b.disabled = !!S.jump;
    b.textContent = S.jump && Number(b.dataset.jump) === j.seconds ? `jumping ${j.label}…` : b.dataset.label;
    b.classList.toggle("busy", !!S.jump && Number(b.dataset.jump) === j.seconds);
  });
  if (S.jump) {
    if (j.now) { $("#clock-now").textContent = dayTime(j.now); $("#clock-now").dateTime = j.now; }
    $("#clock-timers").textContent = $("#clock-timers").title =
      j.waiting.length ? `waiting for: ${j.waiting.join("; ")}` : `jumping ${j.label}…`;
  } else if (S.lastClock) renderClock(S.lastClock);
}
function renderClock(c) {
  if (!c) return;
  S.lastClock = c;
  S.clockNow = c.now;
  $("#clock-now").textContent = dayTime(c.now);
  $("#clock-now").dateTime = c.now;
  document.querySelectorAll(".pending-chip").forEach((el) => {
    el.textContent = pendingText({ kind: el.dataset.kind, due: el.dataset.due });
  });
  if (S.jump) return; // the jump's own line says what it waits for
  let timers = c.pending_timers ? `${c.pending_timers} timer${c.pending_timers > 1 ? "s" : ""}` : "no timers";
  if (c.next_due) timers += ` · next in ${duration((new Date(c.next_due) - new Date(c.now)) / 1000)}`;
  if (c.rate !== 1) timers += ` · ${c.rate}× speed`;
  $("#clock-timers").textContent = $("#clock-timers").title = timers;
}
function renderPlayback(p) {
  const box = $("#playback");
  if (!p || (!p.playing && !p.total)) { box.hidden = true; return; }
  box.hidden = false;
  const speed = p.speed === "instant" ? "instant" : `${p.speed}×`;
  $("#playback-text").textContent = p.playing
    ? `▶ ${p.name} ${p.done}/${p.total} at ${speed}`
    : `✓ ${p.name}: ${p.done}/${p.total} played`;
  $("#playback-stop").hidden = !p.playing;
}

// -- toasts -------------------------------------------------------------------------------
function toast(text, ok = false) {
  const el = h("div", { class: `toast${ok ? " ok" : ""}`, "data-testid": ok ? "toast-ok" : "toast-error" },
    text, h("button", { type: "button", class: "link", "aria-label": "Dismiss", onclick: () => el.remove() }, "×"));
  $("#toasts").append(el);
  setTimeout(() => el.remove(), ok ? 5000 : 12000);
}

// -- tabs ---------------------------------------------------------------------------------
function selectTab(name) {
  S.tab = name;
  for (const t of ["trace", "memory"]) {
    $(`#tab-${t}`).setAttribute("aria-selected", String(t === name));
    $(`#panel-${t}`).hidden = t !== name;
  }
  if (name === "memory") send({ type: "memory", channel: S.channel });
}

// -- wiring -------------------------------------------------------------------------------
function wire() {
  $("#composer").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("#text").value.trim();
    if (!text) return;
    if (send({ type: "say", user: S.me, channel: S.channel, text, reply_to: S.replyTo })) {
      $("#text").value = "";
      S.replyTo = null;
      renderReplyTo();
    }
  });
  $("#text").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      $("#composer").requestSubmit();
    }
  });
  $("#mention").addEventListener("click", () => {
    const box = $("#text");
    box.value = `@${S.persona.name} ${box.value}`;
    box.focus();
  });
  $("#reply-cancel").addEventListener("click", () => { S.replyTo = null; renderReplyTo(); });
  $("#add-person").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = ev.target.elements.name;
    const name = input.value.trim();
    if (S.participants.includes(name)) { setSpeaker(name); input.value = ""; return; }
    if (name && send({ type: "add_participant", name })) { S.pendingMe = name; input.value = ""; }
  });
  $("#add-channel").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    const name = f.name.value.trim().replace(/^#/, "");
    if (S.channels.some((c) => c.id === name)) { switchChannel(name); f.name.value = ""; return; }
    if (name && send({ type: "add_channel", name, visibility: f.visibility.value })) {
      f.name.value = "";
      S.pendingSwitch = name;
    }
  });
  document.querySelectorAll("[data-jump]").forEach((b) => {
    b.dataset.label = b.textContent;
    b.addEventListener("click", () => {
      if (S.jump) return;
      const seconds = Number(b.dataset.jump);
      if (send({ type: "jump", seconds })) renderJump({ active: true, seconds, label: b.dataset.label, waiting: [] });
    });
  });
  $("#model-note-more").addEventListener("click", (ev) => {
    const open = $("#plug-in").hidden;
    $("#plug-in").hidden = !open;
    ev.target.setAttribute("aria-expanded", String(open));
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !$("#plug-in").hidden) {
      $("#plug-in").hidden = true;
      $("#model-note-more").setAttribute("aria-expanded", "false");
    }
  });
  $("#model-note-close").addEventListener("click", () => {
    localStorage.setItem("kuuki.modelNote", (S.model && S.model.name) || "");
    $("#model-note").hidden = true;
  });
  $("#transcript-file").addEventListener("change", async (ev) => {
    const file = ev.target.files[0];
    ev.target.value = "";
    if (!file) return;
    const speed = $("#speed").value;
    const res = await fetch(`/api/transcript?name=${encodeURIComponent(file.name)}&speed=${speed}`, {
      method: "POST", body: await file.text(), headers: { "Content-Type": "application/jsonl" },
    });
    const body = await res.json();
    if (!body.ok) toast(`Could not load ${file.name}:\n${body.problems.join("\n")}`);
    else toast(`Playing ${body.events} events from ${file.name}` + (body.note ? `\n(${body.note})` : ""), true);
  });
  $("#playback-stop").addEventListener("click", () => send({ type: "stop_playback" }));
  $("#tab-trace").addEventListener("click", () => selectTab("trace"));
  $("#tab-memory").addEventListener("click", () => selectTab("memory"));
  $("#memory-refresh").addEventListener("click", () => send({ type: "memory", channel: S.channel }));
  $("#all-channels").addEventListener("change", (ev) => { S.allChannels = ev.target.checked; renderDecisions(); });
}

// Switch to a channel the person just added, once the server has confirmed it.
const baseChannels = HANDLERS.channels;
HANDLERS.channels = (m) => {
  baseChannels(m);
  if (S.pendingSwitch && m.channels.some((c) => c.id === S.pendingSwitch)) {
    const id = S.pendingSwitch;
    S.pendingSwitch = null;
    switchChannel(id);
  }
};
const baseParticipants = HANDLERS.participants;
HANDLERS.participants = (m) => {
  if (S.pendingMe && m.participants.includes(S.pendingMe)) { S.me = S.pendingMe; S.pendingMe = null; }
  if (!m.participants.includes(S.me)) S.me = m.participants[0];
  baseParticipants(m);
};

wire();
connect();
