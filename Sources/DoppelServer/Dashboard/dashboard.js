// Doppel's dashboard: the journal live, sessions, coverage and controls,
// all read from the admin API and GET /__doppel/events on this server.
// Plain JavaScript, no framework; every value from a request is shown as
// text (textContent), never as markup.
"use strict";

const ADMIN = "/__doppel";
const MAX_ROWS = 1000;
const state = {
  token: sessionStorage.getItem("doppel-admin-token") || "",
  entries: [],            // newest last; each a journal entry, with request/answer when it came live
  selected: null,         // the entry whose detail is shown
  endpoints: [],          // from GET /contract
  session: "default",     // the controls' (and the sessions view's) session
  changes: new Map(),     // session -> [{sequence, changes}] of the latest requests
  view: "journal",
  stream: null,           // the AbortController of the event stream
  retry: 0,
};

const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text nodes). */
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function headers(extra) {
  const all = Object.assign({}, extra || {});
  if (state.token) all["Doppel-Admin-Token"] = state.token;
  return all;
}

class Unauthorized extends Error {}

/** Calls the admin API; a 401 asks for the token. */
async function api(method, path, body) {
  const options = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) options.body = JSON.stringify(body);
  const response = await fetch(ADMIN + path, options);
  if (response.status === 401) {
    askForToken();
    throw new Unauthorized("the admin token is missing or wrong");
  }
  const text = await response.text();
  let value = null;
  try { value = text ? JSON.parse(text) : null; } catch (_) { value = text; }
  if (!response.ok) {
    const detail = value && value.detail ? value.detail : response.status + " " + text;
    throw new Error(detail);
  }
  return value;
}

function say(text, bad) {
  const message = $("message");
  message.textContent = text;
  message.classList.toggle("bad", !!bad);
}

function askForToken() {
  $("token-form").hidden = false;
  $("token-input").focus();
  setLive("the admin API needs its token", "down");
}

function setLive(text, kind) {
  const live = $("live");
  live.textContent = text;
  live.className = "status " + (kind || "");
}

// MARK: Starting

async function start() {
  try {
    const contract = await api("GET", "/contract");
    $("contract-title").textContent = contract.title + " " + contract.version;
    state.endpoints = contract.endpoints;
    fillEndpoints();
    const scenarios = await api("GET", "/scenarios");
    const select = $("scenario-select");
    select.replaceChildren(...scenarios.scenarios.map((s) => el("option", { value: s.name, title: s.description || "" }, s.name)));
    if (!scenarios.scenarios.length) select.append(el("option", { value: "" }, "(none loaded: --scenarios DIR)"));
    const journal = await api("GET", "/journal?limit=" + MAX_ROWS);
    state.entries = journal.entries;
    renderJournal();
    await refreshSessions();
    connect();
  } catch (error) {
    if (!(error instanceof Unauthorized)) { setLive("cannot reach the server: " + error.message, "down"); setTimeout(start, 2000); }
  }
}

function fillEndpoints() {
  const filter = $("filter-endpoint");
  filter.replaceChildren(el("option", { value: "" }, "any"), ...state.endpoints.map((e) => el("option", { value: e.id }, e.id)));
  $("force-endpoint").replaceChildren(...state.endpoints.map((e) => el("option", { value: e.id }, e.id + " — " + e.method + " " + e.path)));
  fillStatuses();
}

function fillStatuses() {
  const endpoint = state.endpoints.find((e) => e.id === $("force-endpoint").value);
  const statuses = endpoint ? endpoint.statuses : [];
  $("force-status").replaceChildren(el("option", { value: "" }, "any status"), ...statuses.map((s) => el("option", { value: String(s) }, String(s))));
  if (statuses.length) $("force-status").value = String(statuses[0]);
}

// MARK: The event stream, read with fetch so the token goes in a header

async function connect() {
  if (state.stream) state.stream.abort();
  const controller = new AbortController();
  state.stream = controller;
  try {
    const response = await fetch(ADMIN + "/events", { headers: headers({ Accept: "text/event-stream" }), signal: controller.signal });
    if (response.status === 401) { askForToken(); return; }
    if (!response.ok || !response.body) throw new Error("the event stream answered " + response.status);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        dispatch(block);
      }
    }
    throw new Error("the event stream ended");
  } catch (error) {
    if (controller.signal.aborted) return;
    state.retry = Math.min(state.retry + 1, 5);
    setLive("reconnecting (" + error.message + ")…", "down");
    setTimeout(() => { if (state.stream === controller) catchUp().then(connect); }, state.retry * 1000);
  }
}

/** After a break: the journal again, so nothing answered meanwhile is missing. */
async function catchUp() {
  try {
    const journal = await api("GET", "/journal?limit=" + MAX_ROWS);
    const live = new Map(state.entries.filter((e) => e.request).map((e) => [e.sequence, e]));
    state.entries = journal.entries.map((e) => live.get(e.sequence) || e);
    renderJournal();
  } catch (_) { /* the next attempt tries again */ }
}

function dispatch(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!data.length) return;
  const value = JSON.parse(data.join("\n"));
  switch (event) {
    case "ready":
      state.retry = 0;
      setLive("live", "live");
      break;
    case "request":
    case "socket":
    case "stream":
    case "callback":
      addEntry(value);
      break;
    case "state":
      // A session started over (a reset, a scenario, its whole state replaced), by this page or any
      // other client: the changes marked before belong to the state it left.
      if (/^(POST \S*\/reset|PUT \S*\/scenario|DELETE \S*\/scenario|PUT \S*\/state)/.test(value.call || "")) {
        if (value.session === null) state.changes.clear(); else state.changes.delete(value.session);
      }
      refreshSoon(value.session);
      break;
    case "journal":
      state.entries = [];
      state.selected = null;
      renderJournal();
      refreshSoon(null);
      break;
    case "dropped":
      setLive("the stream fell behind and was dropped; reconnecting", "down");
      break;
  }
}

// MARK: The journal

function addEntry(entry) {
  state.entries.push(entry);
  if (state.entries.length > MAX_ROWS) state.entries.splice(0, state.entries.length - MAX_ROWS);
  if (entry.changes && entry.changes.length) {
    const list = state.changes.get(entry.session) || [];
    list.unshift({ sequence: entry.sequence, method: entry.method, path: entry.path, changes: entry.changes });
    state.changes.set(entry.session, list.slice(0, 5));
  }
  if (matches(entry) && $("follow").checked) {
    // Rows are added once a frame, however fast answers come.
    pendingRows.push(entry);
    if (pendingRows.length > MAX_ROWS) pendingRows.splice(0, pendingRows.length - MAX_ROWS);
    if (!rowsScheduled) { rowsScheduled = true; requestAnimationFrame(flushRows); }
  }
  refreshSoon(entry.session);
}

let pendingRows = [];
let rowsScheduled = false;

function flushRows() {
  rowsScheduled = false;
  const body = $("journal-rows");
  const fragment = document.createDocumentFragment();
  for (const entry of pendingRows.reverse()) fragment.append(row(entry, true));
  pendingRows = [];
  body.prepend(fragment);
  while (body.rows.length > MAX_ROWS) body.deleteRow(-1);
  updateCaption();
}

function statusMatches(filter, status) {
  if (!filter) return true;
  return filter.split(",").map((s) => s.trim()).filter(Boolean).some((part) => {
    if (/^[1-5]xx$/i.test(part)) return Math.floor(status / 100) === Number(part[0]);
    return Number(part) === status;
  });
}

function matches(entry) {
  const session = $("filter-session").value.trim();
  const endpoint = $("filter-endpoint").value;
  return (!session || entry.session === session) && (!endpoint || entry.endpoint === endpoint) && statusMatches($("filter-status").value, entry.status);
}

function row(entry, fresh) {
  const target = entry.path + (entry.query ? "?" + entry.query : "");
  const tr = el("tr", { tabindex: "0", class: fresh ? "fresh" : null, "data-sequence": entry.sequence,
    onclick: () => showDetail(entry, tr),
    onkeydown: (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); showDetail(entry, tr); }
      if (event.key === "ArrowDown" && tr.nextElementSibling) { event.preventDefault(); tr.nextElementSibling.focus(); }
      if (event.key === "ArrowUp" && tr.previousElementSibling) { event.preventDefault(); tr.previousElementSibling.focus(); }
    } },
    el("td", { class: "mono" }, entry.sequence ?? ""),
    el("td", { class: "mono" }, (entry.time || "").replace("T", " ").replace("Z", "")),
    el("td", {}, entry.session),
    el("td", { class: "mono" }, entry.method + " " + target),
    el("td", { class: "mono s" + String(entry.status)[0] }, entry.status),
    el("td", {}, entry.endpoint || "—"),
    el("td", { class: "mono" }, entry.response || (entry.proxied ? "(upstream)" : "—")),
    el("td", { class: "why", title: entry.reason || "" }, entry.reason || ""));
  return tr;
}

function renderJournal() {
  pendingRows = [];
  const shown = state.entries.filter(matches).reverse();
  $("journal-rows").replaceChildren(...shown.map((e) => row(e, false)));
  updateCaption();
}

function updateCaption() {
  $("journal-caption").textContent = $("journal-rows").rows.length + " of " + state.entries.length + " requests, newest first";
}

function facts(pairs) {
  return el("dl", { class: "facts" }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

function message(title, part) {
  if (!part) return el("div", {}, el("h3", {}, title), el("p", { class: "muted" }, "Kept for answers made while this page was open; this one came before."));
  const headerText = part.headers.map(([name, value]) => name + ": " + value).join("\n");
  let body = part.body !== undefined ? part.body : "(" + part.body_bytes + " bytes, not text; base64) " + part.body_base64;
  if (part.body !== undefined && body) {
    try { body = JSON.stringify(JSON.parse(body), null, 2); } catch (_) { /* shown as sent */ }
  }
  const notes = [part.delivery && part.delivery !== "whole" ? "delivered as " + part.delivery : "", part.delay_ms ? "after " + part.delay_ms + " ms" : "",
    part.truncated ? "body cut to its first " + (part.body || part.body_base64 || "").length + " characters of " + part.body_bytes + " bytes" : ""].filter(Boolean);
  return el("div", {}, el("h3", {}, title), notes.length ? el("p", { class: "muted" }, notes.join("; ")) : null,
    el("pre", { "aria-label": title + " headers" }, headerText || "(no headers)"),
    el("pre", { "aria-label": title + " body" }, body || "(no body)"));
}

/** Messages as sent, each pretty-printed when it is JSON. */
function texts(title, list) {
  const shown = list.map((text) => { try { return JSON.stringify(JSON.parse(text), null, 2); } catch (_) { return text; } });
  return el("div", {}, el("h3", {}, title), el("pre", { "aria-label": title }, shown.length ? shown.join("\n\n") : "(none)"));
}

function showDetail(entry, tr) {
  for (const other of $("journal-rows").querySelectorAll("tr[aria-selected]")) other.removeAttribute("aria-selected");
  tr.setAttribute("aria-selected", "true");
  state.selected = entry;
  const detail = $("detail");
  detail.hidden = false;
  detail.replaceChildren(
    el("h2", {}, entry.method + " " + entry.path + (entry.query ? "?" + entry.query : "") + " → " + entry.status),
    facts([["Why", entry.reason || "—"], ["Endpoint", entry.endpoint || "none matched"], ["Response", entry.response || "—"],
      ["Session", entry.session], ["Time", entry.time], ["Took", (entry.duration_us / 1000).toFixed(1) + " ms"],
      ["State changed", entry.changes && entry.changes.length ? entry.changes.join(", ") : "nothing"]]),
    // A WebSocket's, a gRPC stream's or a callback's entry carries its messages instead of a request and response.
    "message" in entry
      ? el("div", { class: "columns" }, texts(entry.method === "CALLBACK" ? "Body sent" : "Message taken", entry.message == null ? [] : [entry.message]),
        texts("Messages sent", entry.sent || []))
      : el("div", { class: "columns" }, message("Request", entry.request), message("Response", entry.answer)),
    el("div", { class: "row" }, el("button", { type: "button", onclick: () => { selectSession(entry.session); showView("sessions"); } }, "Show session " + entry.session)));
}

// MARK: Sessions

let refreshTimer = null;
const pending = new Set();

/** Sessions, the selected one's state and coverage, at most every 200 ms however busy the server. */
function refreshSoon(session) {
  pending.add(session);
  if (refreshTimer) return;
  refreshTimer = setTimeout(async () => {
    refreshTimer = null;
    const touched = new Set(pending);
    pending.clear();
    try {
      if (state.view === "sessions") {
        await refreshSessions();
        if (touched.has(null) || touched.has(state.session)) await showSession();
      } else if (touched.has(null)) {
        await refreshSessions();
      }
      if (state.view === "coverage") await refreshCoverage();
    } catch (error) {
      if (!(error instanceof Unauthorized)) say(error.message, true);
    }
  }, 200);
}

async function refreshSessions() {
  const list = await api("GET", "/sessions");
  $("session-ids").replaceChildren(...list.sessions.map((s) => el("option", { value: s.id })));
  $("session-list").replaceChildren(...list.sessions.map((s) => el("button", {
    type: "button", role: "listitem", "aria-pressed": String(s.id === state.session),
    onclick: () => { selectSession(s.id); showSession(); } }, s.id + (s.scenario ? " · " + s.scenario : ""))));
}

function selectSession(id, typed) {
  state.session = id;
  if (!typed) $("control-session").value = id;
  for (const button of $("session-list").querySelectorAll("button")) button.setAttribute("aria-pressed", String(button.textContent.split(" · ")[0] === id));
}

function tree(value, path, changed) {
  if (value === null || typeof value !== "object") {
    return el("span", { class: "mono" }, JSON.stringify(value));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  if (!entries.length) return el("span", { class: "mono" }, Array.isArray(value) ? "[]" : "{}");
  return el("ul", { class: "tree" }, entries.map(([key, child]) => {
    const childPath = path ? path + "." + key : key;
    const hit = changed.some((c) => c === childPath || c.startsWith(childPath + "."));
    const label = el("span", { class: "key" + (changed.includes(childPath) ? " changed" : "") }, key);
    if (child !== null && typeof child === "object" && Object.keys(child).length) {
      const count = Array.isArray(child) ? child.length + " items" : Object.keys(child).length + " keys";
      return el("li", {}, el("details", { open: hit || path === "" ? true : null }, el("summary", {}, label, " ", el("span", { class: "muted" }, count)), tree(child, childPath, changed)));
    }
    return el("li", {}, label, ": ", tree(child, childPath, changed));
  }));
}

async function showSession() {
  const id = state.session;
  const query = "?session=" + encodeURIComponent(id);
  const [found, clock, next] = await Promise.all([api("GET", "/state" + query), api("GET", "/clock" + query), api("GET", "/next" + query)]);
  const recent = state.changes.get(id) || [];
  const changed = recent.length ? recent[0].changes : [];
  $("session-detail").replaceChildren(
    el("h2", {}, "Session " + id + (found.exists ? "" : " (not started yet: the initial state)")),
    facts([["Clock", clock.now + (clock.frozen ? " (frozen)" : "") + (clock.offset_seconds ? ", " + describeOffset(clock.offset_seconds) : ", real time")],
      ["Scenario", found.scenario || "none"],
      ["Forced next", next.waiting.length ? next.waiting.map((w) => w.endpoint + " → " + w.status + " " + w.response).join("; ") : "none"]]),
    el("h3", {}, "Latest changes"),
    recent.length ? el("ul", {}, recent.map((r) => el("li", {}, el("span", { class: "mono" }, "#" + r.sequence + " " + r.method + " " + r.path), ": " + r.changes.join(", "))))
      : el("p", { class: "muted" }, "No request has changed this session's state while the page was open."),
    el("h3", {}, "State"),
    tree(found.state, "", changed));
}

function describeOffset(seconds) {
  const days = seconds / 86400;
  return (seconds > 0 ? "+" : "") + (Math.abs(days) >= 1 ? days.toFixed(1) + " days" : Math.round(seconds) + " s") + " from real time";
}

// MARK: Coverage

async function refreshCoverage() {
  const only = $("coverage-this-session").checked;
  const coverage = await api("GET", "/coverage" + (only ? "?session=" + encodeURIComponent(state.session) : ""));
  $("coverage-summary").textContent = coverage.reached + " of " + coverage.total + " documented endpoint × status pairs reached" + (only ? " in session " + state.session : " in all sessions") + ".";
  $("coverage-rows").replaceChildren(...coverage.endpoints.map((endpoint) => el("tr", {},
    el("td", {}, endpoint.id), el("td", { class: "mono" }, endpoint.request),
    el("td", {}, endpoint.statuses.map((s) => el("span", { class: "badge " + (s.reached ? "reached" : "unreached"),
      title: s.reached ? "answered " + s.count + " times" : "never answered" }, s.status + (s.reached ? " ×" + s.count : "")))))));
}

// MARK: Views and controls

function showView(name) {
  state.view = name;
  for (const view of ["journal", "sessions", "coverage"]) {
    $("view-" + view).hidden = view !== name;
    $("tab-" + view).setAttribute("aria-selected", String(view === name));
  }
  if (name === "sessions") refreshSessions().then(showSession).catch((e) => say(e.message, true));
  if (name === "coverage") refreshCoverage().catch((e) => say(e.message, true));
}

/** Runs a control's admin call and says what it did. */
function control(id, run) {
  $(id).addEventListener("click", async () => {
    const session = $("control-session").value.trim() || "default";
    selectSession(session, true);
    try {
      say(await run(session, "?session=" + encodeURIComponent(session)));
      refreshSoon(session);
    } catch (error) {
      if (!(error instanceof Unauthorized)) say(error.message, true);
    }
  });
}

function wire() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token-input").value;
    sessionStorage.setItem("doppel-admin-token", state.token);
    $("token-form").hidden = true;
    start();
  });
  for (const view of ["journal", "sessions", "coverage"]) $("tab-" + view).addEventListener("click", () => showView(view));
  for (const id of ["filter-session", "filter-status"]) $(id).addEventListener("input", renderJournal);
  $("filter-endpoint").addEventListener("change", renderJournal);
  $("follow").addEventListener("change", renderJournal);
  $("force-endpoint").addEventListener("change", fillStatuses);
  $("sessions-refresh").addEventListener("click", () => refreshSessions().then(showSession).catch((e) => say(e.message, true)));
  $("coverage-refresh").addEventListener("click", () => refreshCoverage().catch((e) => say(e.message, true)));
  $("coverage-this-session").addEventListener("change", () => refreshCoverage().catch((e) => say(e.message, true)));
  $("control-session").addEventListener("change", () => { selectSession($("control-session").value.trim() || "default", true); if (state.view === "sessions") showSession().catch((e) => say(e.message, true)); });
  document.addEventListener("keydown", (event) => {
    // "/" jumps to the journal's filters, as in many log viewers.
    if (event.key === "/" && !["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) {
      event.preventDefault();
      showView("journal");
      $("filter-session").focus();
    }
  });

  control("reset-session", async (session, query) => {
    await api("POST", "/reset" + query);
    state.changes.delete(session);
    return "Session " + session + " reset: it starts over from the contract's initial state.";
  });
  control("clock-advance-button", async (session, query) => {
    const clock = await api("POST", "/clock" + query, { advance: $("clock-advance").value.trim() });
    return "Session " + session + "'s clock now reads " + clock.now + ".";
  });
  control("clock-set-button", async (session, query) => {
    const clock = await api("POST", "/clock" + query, { set: $("clock-set").value.trim() });
    return "Session " + session + "'s clock now reads " + clock.now + ".";
  });
  control("clock-real", async (session, query) => {
    const clock = await api("POST", "/clock" + query, { reset: true });
    return "Session " + session + " is back on real time: " + clock.now + ".";
  });
  control("scenario-start", async (session, query) => {
    const name = $("scenario-select").value;
    if (!name) throw new Error("no scenario is loaded (serve with --scenarios DIR)");
    await api("PUT", "/scenario" + query, { name });
    state.changes.delete(session);
    return "Session " + session + " started over from scenario " + name + ".";
  });
  control("scenario-stop", async (session, query) => {
    await api("DELETE", "/scenario" + query);
    return "Session " + session + " started over from the plain contract.";
  });
  control("force-button", async (session, query) => {
    const body = { endpoint: $("force-endpoint").value };
    if ($("force-status").value) body.status = Number($("force-status").value);
    if ($("force-response").value.trim()) body.response = $("force-response").value.trim();
    const next = await api("POST", "/next" + query, body);
    const last = next.waiting[next.waiting.length - 1];
    return "The next call of " + last.endpoint + " in session " + session + " gets " + last.status + " (" + last.response + ").";
  });
  control("force-clear", async (session, query) => {
    await api("DELETE", "/next" + query);
    return "Forced answers of session " + session + " dropped.";
  });
  control("clear-journal", async () => {
    await api("DELETE", "/journal");
    return "Journal cleared.";
  });
}

/** Asks for the token first where the server needs one and the tab has none. */
async function begin() {
  try {
    const settings = await (await fetch(ADMIN + "/ui/settings.json")).json();
    if (settings.token_required && !state.token) { askForToken(); return; }
  } catch (_) { /* start() says the server cannot be reached */ }
  start();
}

wire();
begin();
