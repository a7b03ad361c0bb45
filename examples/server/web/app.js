// The page of examples/server: plain script, no framework, no build step.
// It talks to bichat.Handler under /api (sessions, messages, the run as
// server-sent events, answers, decisions, artifacts, models, recipes) and
// to the example's /ui routes for Markdown rendered and sanitised on the
// server. Text from the server is only ever put in the page as text
// (textContent), except the sanitised HTML of /ui.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);

const state = {
  sessionId: "",
  session: null,
  search: "",
  models: [],
  defaultModel: "",
  config: { suggestions: [] },
  stream: null, // {id, el, es}
};

// ---------------------------------------------------------------------------
// HTTP

async function api(method, path, body) {
  const opts = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  if (res.status === 204) return null;
  let data = null;
  try { data = await res.json(); } catch { /* not JSON */ }
  if (!res.ok) {
    const err = new Error((data && data.error && data.error.message) || res.status + " " + res.statusText);
    err.status = res.status;
    err.code = data && data.error && data.error.code;
    throw err;
  }
  return data;
}

const enc = encodeURIComponent;

function setStatus(text, isError) {
  const s = $("#status");
  s.textContent = text || "";
  s.classList.toggle("error", !!isError);
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

// ---------------------------------------------------------------------------
// Sidebar: chats grouped by date, search, rename, delete

function dayGroup(iso) {
  const d = new Date(iso);
  const today = new Date();
  today.setHours(0, 0, 0, 0);
  const days = Math.floor((today - new Date(d.getFullYear(), d.getMonth(), d.getDate())) / 86400000);
  if (days <= 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days < 7) return "Previous 7 days";
  if (days < 30) return "Previous 30 days";
  return d.toLocaleDateString(undefined, { year: "numeric", month: "long" });
}

async function loadSessions() {
  const q = new URLSearchParams({ page_size: "100", sort: "updated", order: "desc" });
  if (state.search) q.set("search", state.search);
  let page;
  try {
    page = await api("GET", "/api/sessions?" + q);
  } catch (err) {
    setStatus("Could not load the chats: " + err.message, true);
    return;
  }
  const nav = $("#sessions");
  nav.replaceChildren();
  if (page.items.length === 0) {
    nav.append(el("div", { class: "no-sessions", text: state.search ? "No chat matches." : "No chats yet." }));
    return;
  }
  let group = "";
  for (const s of page.items) {
    if (s.id === state.sessionId && state.session) {
      state.session = s;
      setTitle(s.title);
    }
    const g = dayGroup(s.updated_at);
    if (g !== group) {
      group = g;
      nav.append(el("div", { class: "group", text: g }));
    }
    nav.append(sessionItem(s));
  }
}

function sessionItem(s) {
  const item = el("div", { class: "session" + (s.id === state.sessionId ? " active" : ""), "data-id": s.id });
  const link = el("a", { href: "#" + s.id, text: s.title || "New chat", title: s.title });
  const rename = el("button", { type: "button", class: "rename", title: "Rename", text: "✎" });
  const del = el("button", { type: "button", class: "delete", title: "Delete", text: "✕" });
  rename.addEventListener("click", () => startRename(item, s));
  del.addEventListener("click", async () => {
    if (!del.classList.contains("confirming")) {
      del.classList.add("confirming");
      del.textContent = "Delete?";
      setTimeout(() => { del.classList.remove("confirming"); del.textContent = "✕"; }, 4000);
      return;
    }
    try {
      await api("DELETE", "/api/sessions/" + enc(s.id));
    } catch (err) {
      setStatus("Could not delete the chat: " + err.message, true);
      return;
    }
    if (s.id === state.sessionId) newChat();
    loadSessions();
  });
  item.append(link, rename, del);
  return item;
}

function startRename(item, s) {
  const input = el("input", { type: "text", value: s.title || "", maxlength: "200", "aria-label": "New title" });
  const link = $("a", item);
  link.replaceWith(input);
  input.focus();
  input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    if (save && title && title !== s.title) {
      try {
        const updated = await api("PATCH", "/api/sessions/" + enc(s.id), { title });
        if (updated.id === state.sessionId) setTitle(updated.title);
      } catch (err) {
        setStatus("Could not rename the chat: " + err.message, true);
      }
    }
    loadSessions();
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    if (e.key === "Escape") { e.preventDefault(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
}

// ---------------------------------------------------------------------------
// Models

async function loadModels() {
  try {
    const list = await api("GET", "/api/models");
    state.models = list.items;
  } catch (err) {
    setStatus("Could not load the models: " + err.message, true);
    return;
  }
  const sel = $("#model");
  sel.replaceChildren();
  for (const m of state.models) {
    if (m.default) state.defaultModel = m.name;
    sel.append(el("option", { value: m.name, text: m.name + " (" + m.provider + ")" }));
  }
  syncPicker();
}

// syncPicker shows the open chat's model (fixed for the chat) or, for a
// new chat, lets the user pick one.
function syncPicker() {
  const sel = $("#model");
  if (state.session) {
    sel.value = state.session.model || state.defaultModel;
    sel.disabled = true;
    sel.title = "The model of this chat. Start a new chat to pick another.";
  } else {
    sel.disabled = false;
    sel.title = "The model new chats use";
    if (!sel.value) sel.value = state.defaultModel;
  }
}

// ---------------------------------------------------------------------------
// Chat

function setTitle(t) {
  $("#chat-title").textContent = t || "New chat";
  document.title = (t || "New chat") + " · bichat";
}

function showEmpty(show) {
  const empty = $("#empty");
  if (show) {
    $("#messages").replaceChildren(empty);
    empty.hidden = false;
  } else {
    empty.hidden = true;
  }
}

function newChat() {
  closeStream();
  state.sessionId = "";
  state.session = null;
  if (location.hash) history.pushState(null, "", location.pathname);
  setTitle("");
  showEmpty(true);
  syncPicker();
  setBusy(false);
  markActive();
  $("#input").focus();
}

function markActive() {
  for (const item of document.querySelectorAll(".session")) {
    item.classList.toggle("active", item.dataset.id === state.sessionId);
  }
}

async function openSession(id) {
  closeStream();
  state.sessionId = id;
  markActive();
  let sess, rendered;
  try {
    [sess, rendered] = await Promise.all([
      api("GET", "/api/sessions/" + enc(id)),
      api("GET", "/ui/sessions/" + enc(id) + "/messages"),
    ]);
  } catch (err) {
    setStatus(err.status === 404 ? "This chat does not exist any more." : "Could not open the chat: " + err.message, true);
    newChat();
    return;
  }
  if (state.sessionId !== id) return; // another chat was opened meanwhile
  state.session = sess;
  setTitle(sess.title);
  syncPicker();
  setStatus("");
  const box = $("#messages");
  showEmpty(rendered.items.length === 0);
  if (rendered.items.length === 0) return;
  box.replaceChildren($("#empty"));
  for (const m of rendered.items) {
    if (m.role === "user") {
      box.append(userMessage(m.text));
    } else if (m.role === "assistant") {
      const node = assistantMessage(m.id, m.status);
      box.append(node);
      await showStored(node, m);
    }
  }
  scrollDown(true);
}

function userMessage(text) {
  return el("div", { class: "msg user" }, el("div", { class: "bubble", text }));
}

function assistantMessage(id, status) {
  return el("div", { class: "msg assistant", "data-id": id, "data-status": status },
    el("div", { class: "steps" }),
    el("div", { class: "charts" }),
    el("div", { class: "body" }),
    el("div", { class: "interaction" }),
    el("div", { class: "files" }),
    el("div", { class: "meta" }));
}

// showStored renders a message as stored, and follows it if it is still
// being generated or waits for the user.
async function showStored(node, m) {
  if (m.status === "generating") {
    // Replay the run from its first event: the page rebuilds what it
    // missed, then goes on live.
    follow(node);
    return;
  }
  for (const t of m.tools || []) addStoredTool(node, t);
  if (m.tokens) node.dataset.tokens = m.tokens;
  setBody(node, m.html);
  if (m.status === "failed") showError(node, m.error);
  await showArtifacts(node);
  if (m.status === "awaiting_input") await showPending(node);
  if (m.status === "complete") showMeta(node);
}

function setBody(node, html) {
  const body = $(".body", node);
  body.innerHTML = html || ""; // sanitised on the server (goldmark + bluemonday)
}

function showError(node, e) {
  const msg = e && e.code === "cancelled" ? "Stopped." : (e && e.message) || "The answer failed.";
  $(".interaction", node).replaceChildren(el("p", { class: "error", text: msg }));
}

function nearBottom() {
  const box = $("#messages");
  return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
}

function scrollDown(force) {
  if (force || nearBottom()) {
    const box = $("#messages");
    box.scrollTop = box.scrollHeight;
  }
}

// ---------------------------------------------------------------------------
// Tool calls: accordions with the SQL, the result table and charts

function toolNode(node, callId, name) {
  let d = node.querySelector(`details.tool[data-call="${CSS.escape(callId)}"]`);
  if (d) return d;
  d = el("details", { class: "tool", "data-call": callId, "data-name": name },
    el("summary", {}, el("span", { class: "name", text: name }), " ", el("span", { class: "state", text: "running…" })),
    el("div", { class: "content" }));
  $(".steps", node).append(d);
  return d;
}

function showArguments(d, name, args) {
  const content = $(".content", d);
  if ($(".sql, .args", content)) return;
  if (args && typeof args.sql === "string") {
    content.prepend(el("pre", { class: "sql", text: args.sql }));
  } else if (args && Object.keys(args).length > 0) {
    content.prepend(el("pre", { class: "args", text: JSON.stringify(args, null, 2) }));
  }
}

function addStoredTool(node, t) {
  const d = toolNode(node, t.id, t.name);
  let args = null;
  try { args = JSON.parse(t.arguments); } catch { /* cut */ }
  if (t.sql) args = { sql: t.sql };
  showArguments(d, t.name, args);
  $(".state", d).textContent = t.error ? "failed" : toolDone(t.name, t.duration_ms);
  d.classList.toggle("failed", !!t.error);
  const content = $(".content", d);
  if (!$(".summary, table.result", content)) {
    const s = el("div", { class: "summary" });
    s.innerHTML = t.summary_html || ""; // sanitised on the server
    content.append(s);
  }
}

function toolDone(name, ms) {
  return name === "ask_user_question" ? "answered" : ms + " ms";
}

// markWaiting labels the tool calls a stopped run waits on.
function markWaiting(node, text) {
  for (const s of node.querySelectorAll("details.tool .state")) {
    if (s.textContent === "running…") s.textContent = text;
  }
}

function cellText(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") {
    const frac = Number.isInteger(v) ? 0 : 2;
    return v.toLocaleString(undefined, { minimumFractionDigits: frac, maximumFractionDigits: frac });
  }
  return String(v);
}

function resultTable(t, truncated) {
  const table = el("table", { class: "result" });
  const head = el("tr");
  for (const c of t.columns || []) head.append(el("th", { text: c.name }));
  table.append(el("thead", {}, head));
  const body = el("tbody");
  const rows = t.rows || [];
  for (const r of rows.slice(0, 200)) {
    const tr = el("tr");
    r.forEach((v) => tr.append(el("td", { class: typeof v === "number" ? "num" : undefined, text: cellText(v) })));
    body.append(tr);
  }
  table.append(body);
  const wrap = el("div", {}, table);
  if (rows.length > 200 || truncated || t.truncated) {
    wrap.append(el("p", { class: "muted", text: "Only the first rows are shown; download the CSV for all of them." }));
  }
  return wrap;
}

function onToolCall(node, d) {
  const t = toolNode(node, d.call_id, d.name);
  showArguments(t, d.name, d.arguments);
}

function onToolResult(node, d) {
  const t = toolNode(node, d.call_id, d.name);
  const state = $(".state", t);
  const content = $(".content", t);
  if (d.error) {
    t.classList.add("failed");
    state.textContent = "failed";
    content.append(el("p", { class: "error", text: d.error }));
    return;
  }
  state.textContent = toolDone(d.name, d.duration_ms);
  const p = d.payload;
  if (p && p.table && Array.isArray(p.table.columns)) {
    content.append(resultTable(p.table, d.truncated || p.truncated));
    t.open = true;
  } else if (d.summary) {
    content.append(el("p", { class: "muted", text: d.summary }));
  }
  for (const a of d.artifacts || []) addArtifact(node, a);
}

function addArtifact(node, a) {
  if (!a.url) return;
  const files = $(".files", node);
  if (!files.querySelector(`a[data-id="${CSS.escape(a.id)}"]`)) {
    files.append(el("a", { href: a.url, download: a.name, "data-id": a.id, text: a.name }));
  }
  if (a.kind === "chart" && a.media_type === "image/png") {
    const charts = $(".charts", node);
    if (!charts.querySelector(`img[data-id="${CSS.escape(a.id)}"]`)) {
      charts.append(el("img", { class: "chart", src: a.url, alt: a.name, "data-id": a.id }));
    }
  }
}

async function showArtifacts(node) {
  try {
    const list = await api("GET", "/api/messages/" + enc(node.dataset.id) + "/artifacts");
    for (const a of list.items) addArtifact(node, a);
  } catch (err) {
    setStatus("Could not list the files: " + err.message, true);
  }
}

// ---------------------------------------------------------------------------
// Streaming: the run as server-sent events

function closeStream() {
  if (state.stream) {
    state.stream.es.close();
    state.stream = null;
  }
  setBusy(false);
}

function setBusy(busy) {
  $("#stop").hidden = !busy;
  $("#send").disabled = busy;
}

// follow streams the run of an assistant message into node. A new
// EventSource starts from the run's first event (the server replays what
// happened before, then the live run); if the connection drops, the
// browser reconnects by itself with Last-Event-ID and the server resumes
// after the last event received, without a gap or a duplicate.
function follow(node) {
  closeStream();
  const id = node.dataset.id;
  node.dataset.status = "generating";
  // The run's text goes after what the message already shows (the text
  // of its earlier run, when it continues after an answer or a decision).
  const body = $(".body", node);
  let live = $(".live", body);
  if (live) live.textContent = "";
  else body.append((live = el("div", { class: "live" })));
  const es = new EventSource("/api/messages/" + enc(id) + "/events");
  state.stream = { id, el: node, es };
  setBusy(true);
  // Event ids are the run's seqs: 1, 2, 3, ... The page counts what it
  // receives and notes a gap or a duplicate (which it skips), so a
  // reconnection can be checked.
  let last = 0;
  node.dataset.received = "0";
  node.dataset.opens = "0";
  delete node.dataset.gap;
  delete node.dataset.dup;
  es.addEventListener("open", () => { node.dataset.opens = String(Number(node.dataset.opens) + 1); });
  const on = (name, fn) => es.addEventListener(name, (ev) => {
    if (!state.stream || state.stream.es !== es) return;
    const seq = Number(ev.lastEventId);
    if (seq <= last) {
      node.dataset.dup = "true";
      return;
    }
    if (seq !== last + 1) node.dataset.gap = "true";
    last = seq;
    node.dataset.received = String(Number(node.dataset.received) + 1);
    let data;
    try { data = JSON.parse(ev.data); } catch { return; }
    node.dataset.seq = ev.lastEventId;
    const stick = nearBottom();
    fn(data);
    if (stick) scrollDown(true);
  });
  on("message_start", (d) => {
    node.dataset.run = d.run_id;
  });
  on("text", (d) => {
    if (d.agent) return; // a sub-agent's text belongs to its tool call
    live.append(d.text);
  });
  on("reasoning", (d) => {
    let r = $("details.reasoning", node);
    if (!r) {
      r = el("details", { class: "reasoning" }, el("summary", { text: "Reasoning" }), el("div", { class: "content" }));
      $(".steps", node).append(r);
    }
    $(".content", r).append(d.text);
  });
  on("tool_call", (d) => onToolCall(node, d));
  on("tool_result", (d) => onToolResult(node, d));
  on("token_update", (d) => {
    node.dataset.tokens = d.total.total_tokens;
  });
  on("interrupt", async (d) => {
    closeStream();
    node.dataset.status = "awaiting_input";
    await finishRun(node);
    markWaiting(node, "waiting for your answer");
    showQuestions(node, d.questions);
  });
  on("confirmation_required", async (d) => {
    closeStream();
    node.dataset.status = "awaiting_input";
    await finishRun(node);
    markWaiting(node, "waiting for your approval");
    showConfirmation(node, d.confirmation);
  });
  on("message_complete", async () => {
    closeStream();
    await finishRun(node);
    node.dataset.status = "complete";
    showMeta(node);
    loadSessions();
  });
  on("message_error", async (d) => {
    closeStream();
    await finishRun(node);
    node.dataset.status = "failed";
    showError(node, d);
  });
  es.addEventListener("error", () => {
    if (es.readyState === EventSource.CLOSED && state.stream && state.stream.es === es) {
      // The server refused the stream or had nothing to send: show the
      // message as stored.
      closeStream();
      refreshMessage(node);
    }
    // Otherwise the browser reconnects with Last-Event-ID.
  });
}

// finishRun replaces the streamed text with the message rendered on the
// server and adds what the stored message has that the stream did not
// show (tool calls of an earlier run of the message, files).
async function finishRun(node) {
  let m;
  try {
    m = await api("GET", "/ui/messages/" + enc(node.dataset.id));
  } catch (err) {
    setStatus("Could not load the answer: " + err.message, true);
    return;
  }
  for (const t of m.tools || []) {
    if (!node.querySelector(`details.tool[data-call="${CSS.escape(t.id)}"]`)) addStoredTool(node, t);
  }
  if (m.tokens) node.dataset.tokens = m.tokens;
  setBody(node, m.html);
  await showArtifacts(node);
  scrollDown(false);
}

async function refreshMessage(node) {
  let m;
  try {
    m = await api("GET", "/ui/messages/" + enc(node.dataset.id));
  } catch (err) {
    setStatus("Could not load the answer: " + err.message, true);
    return;
  }
  node.dataset.status = m.status;
  await showStored(node, m);
}

function showMeta(node) {
  const meta = $(".meta", node);
  if ($("button.good", meta)) return;
  meta.replaceChildren();
  if (node.dataset.tokens) meta.append(el("span", { text: Number(node.dataset.tokens).toLocaleString() + " tokens" }));
  // A recipe keeps the SQL that answered the question.
  if (!node.querySelector("details.tool[data-name=query_database]:not(.failed)")) return;
  const good = el("button", { type: "button", class: "good", title: "Remember how this was answered", text: "✓ Good answer" });
  good.addEventListener("click", async () => {
    good.disabled = true;
    try {
      await api("POST", "/api/messages/" + enc(node.dataset.id) + "/recipe");
      good.textContent = "Saved as a recipe";
    } catch (err) {
      good.disabled = false;
      setStatus(err.message, true);
    }
  });
  meta.prepend(good);
}

// ---------------------------------------------------------------------------
// Interrupts: the question form and the confirmation dialog

async function showPending(node) {
  let it;
  try {
    it = await api("GET", "/api/messages/" + enc(node.dataset.id) + "/interrupt");
  } catch (err) {
    setStatus("Could not load what the answer waits for: " + err.message, true);
    return;
  }
  if (it.kind === "confirmation" && it.confirmation) showConfirmation(node, it.confirmation);
  else showQuestions(node, it.questions || []);
}

function showQuestions(node, questions) {
  const form = el("form", { class: "questions" });
  for (const q of questions) {
    const fs = el("fieldset", { "data-question": q.id }, el("legend", { text: q.question }));
    const type = q.multi_select ? "checkbox" : "radio";
    for (const o of q.options || []) {
      fs.append(el("label", { class: "option" },
        el("input", { type, name: "q-" + q.id, value: o.label }), " " + o.label,
        o.description ? el("small", { text: o.description }) : null));
    }
    if (!q.options || q.options.length === 0 || q.allow_other) {
      fs.append(el("input", { type: "text", class: "other", name: "t-" + q.id, maxlength: "2000",
        placeholder: q.options && q.options.length ? "Something else…" : "Your answer", "aria-label": q.question }));
    }
    form.append(fs);
  }
  const submit = el("button", { type: "submit", text: "Answer" });
  form.append(submit);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const answers = {};
    const said = [];
    for (const q of questions) {
      const selected = [...form.querySelectorAll(`input[name="q-${CSS.escape(q.id)}"]:checked`)].map((i) => i.value);
      const other = form.querySelector(`input[name="t-${CSS.escape(q.id)}"]`);
      const text = other ? other.value.trim() : "";
      answers[q.id] = {};
      if (selected.length) answers[q.id].selected = selected;
      if (text) answers[q.id].text = text;
      said.push([...selected, text].filter(Boolean).join(", "));
    }
    submit.disabled = true;
    try {
      await api("POST", "/api/messages/" + enc(node.dataset.id) + "/answers", { answers });
    } catch (err) {
      submit.disabled = false;
      setStatus(err.message, true);
      return;
    }
    setStatus("");
    $(".interaction", node).replaceChildren(el("p", { class: "answered", text: "You answered: " + said.join("; ") }));
    follow(node);
  });
  $(".interaction", node).replaceChildren(form);
  const first = form.querySelector("input");
  if (first) first.focus();
  scrollDown(true);
}

function showConfirmation(node, c) {
  const review = el("button", { type: "button", text: "Review" });
  review.addEventListener("click", () => openDialog(node, c));
  $(".interaction", node).replaceChildren(el("div", { class: "awaiting" },
    el("span", { text: "Waiting for your approval to run " + c.tool + "." }), review));
  openDialog(node, c);
}

function openDialog(node, c) {
  const dlg = $("#confirm");
  $("#confirm-desc").textContent = c.description || "The assistant wants to run a tool that changes something.";
  $("#confirm-tool").textContent = c.tool;
  $("#confirm-perm").textContent = c.permission;
  let args = c.arguments;
  try { args = JSON.stringify(c.arguments, null, 2); } catch { /* keep */ }
  $("#confirm-args").textContent = args;
  $("#confirm-exp").textContent = c.expires_at ? "This request expires at " + new Date(c.expires_at).toLocaleTimeString() + "." : "";
  $("#confirm-reason").value = "";
  const decide = async (approve) => {
    const body = { token: c.token };
    const reason = $("#confirm-reason").value.trim();
    if (!approve && reason) body.reason = reason;
    $("#approve").disabled = $("#deny").disabled = true;
    try {
      await api("POST", "/api/messages/" + enc(node.dataset.id) + (approve ? "/approve" : "/deny"), body);
    } catch (err) {
      setStatus(err.message, true);
      return;
    } finally {
      $("#approve").disabled = $("#deny").disabled = false;
    }
    dlg.close();
    setStatus("");
    $(".interaction", node).replaceChildren(el("p", { class: "answered", text: (approve ? "Approved " : "Denied ") + c.tool + "." }));
    follow(node);
  };
  $("#approve").onclick = () => decide(true);
  $("#deny").onclick = () => decide(false);
  if (!dlg.open) dlg.showModal();
}

// ---------------------------------------------------------------------------
// Sending

async function send(text) {
  text = text.trim();
  if (!text || (state.stream && !$("#stop").hidden)) return;
  setStatus("");
  try {
    if (!state.sessionId) {
      const model = $("#model").value;
      const body = model && model !== state.defaultModel ? { model } : {};
      const s = await api("POST", "/api/sessions", body);
      state.sessionId = s.id;
      state.session = s;
      history.pushState(null, "", "#" + s.id);
      setTitle(s.title);
      syncPicker();
    }
    const r = await api("POST", "/api/sessions/" + enc(state.sessionId) + "/messages", { text });
    $("#input").value = "";
    showEmpty(false);
    const box = $("#messages");
    box.append(userMessage(r.user_message.parts.filter((p) => p.type === "text").map((p) => p.text).join("")));
    const node = assistantMessage(r.assistant_message.id, r.assistant_message.status);
    box.append(node);
    scrollDown(true);
    follow(node);
    loadSessions();
  } catch (err) {
    setStatus(err.code === "conflict" ? "Wait for the current answer to finish, or stop it." : err.message, true);
  }
}

async function stop() {
  if (!state.stream) return;
  const id = state.stream.id;
  try {
    await api("POST", "/api/messages/" + enc(id) + "/cancel");
  } catch (err) {
    // 409: the run ended meanwhile; the stream says how.
    if (err.status !== 409) setStatus("Could not stop: " + err.message, true);
  }
}

// ---------------------------------------------------------------------------
// Start-up

function route() {
  const id = decodeURIComponent(location.hash.slice(1));
  if (id && id !== state.sessionId) openSession(id);
  else if (!id && state.sessionId) newChat();
}

async function start() {
  $("#composer").addEventListener("submit", (e) => { e.preventDefault(); send($("#input").value); });
  $("#input").addEventListener("keydown", (e) => {
    // Enter sends; Shift+Enter adds a line (the textarea's default).
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send($("#input").value);
    }
  });
  $("#stop").addEventListener("click", stop);
  $("#new-chat").addEventListener("click", newChat);
  let timer = 0;
  $("#search").addEventListener("input", (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.search = e.target.value.trim(); loadSessions(); }, 200);
  });
  window.addEventListener("hashchange", route);
  try {
    state.config = await api("GET", "/ui/config");
  } catch { /* suggestions are optional */ }
  const sug = $("#suggestions");
  for (const q of state.config.suggestions || []) {
    sug.append(el("button", { type: "button", text: q, onclick: () => send(q) }));
  }
  if (state.config.model_note) setStatus(state.config.model_note);
  await loadModels();
  await loadSessions();
  route();
  document.body.dataset.ready = "true";
}

start();
