// The demo page: the public API only, from this origin; no build step, nothing fetched
// from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const DEFAULT_CHECKED = ["linear", "softmax"];
const FALLBACK_MODES = ["none", "linear", "gated", "softmax", "mentions"];
let current = null; // the indexed document's status (GET /v1/documents/{id})
// The texts this page indexed (the service keeps no text), by id, with their text hash:
// where an answer is can be shown in a text the page knows.
const TEXT_KEY = (id) => `cheapqa-text:${id}`;

class ApiError extends Error {
  constructor(status, envelope) {
    const e = (envelope && envelope.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || `http_${status}`;
  }
}

// One request; resolves {body, clientMs, serverMs}, or throws ApiError with the envelope.
async function api(method, path, body) {
  const headers = {};
  const key = $("api-key").value.trim();
  if (key) headers["Authorization"] = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const started = performance.now();
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const clientMs = performance.now() - started;
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch (_) { parsed = null; }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return { body: parsed, clientMs, serverMs: serverTiming(response) };
}

function serverTiming(response) {
  const header = response.headers.get("Server-Timing") || "";
  const match = header.match(/dur=([0-9.]+)/);
  return match ? parseFloat(match[1]) : null;
}

function showError(error) {
  $("error").textContent = error ? `Error: ${error.message}` + (error.code ? ` (${error.code})` : "") : "";
}

const docPath = (id) => `/v1/documents/${encodeURIComponent(id)}`;

async function loadModes() {
  let modes = FALLBACK_MODES;
  try {
    const response = await fetch("/readyz");
    const body = await response.json();
    const models = body.models || (body.error && body.error.detail && body.error.detail.models);
    if (models && Object.keys(models).length) modes = Object.keys(models);
  } catch (_) { /* keep the fallback */ }
  $("modes").replaceChildren(...modes.map((mode) => {
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = mode;
    box.name = "mode";
    box.checked = DEFAULT_CHECKED.includes(mode);
    label.append(box, ` ${mode}`);
    return label;
  }));
}

function setStatus(status, text) {
  $("status").className = `status ${status}`;
  $("status").textContent = text;
  $("progress").hidden = status !== "queued";
}

function rememberText(id, textHash, text) {
  try { sessionStorage.setItem(TEXT_KEY(id), JSON.stringify({ textHash, text })); } catch (_) {}
}

// The text of a document as indexed, when this page posted it (same text hash), else null.
function knownText(doc) {
  try {
    const kept = JSON.parse(sessionStorage.getItem(TEXT_KEY(doc.id)) || "null");
    return kept && kept.textHash === doc.text_hash ? kept.text : null;
  } catch (_) { return null; }
}

// The document's text with `spans` ([start, end) in code points) marked; a note without it.
function showInText(doc, spans) {
  const view = $("doc-view");
  const text = doc && knownText(doc);
  view.classList.toggle("unknown", !text);
  if (!text) {
    view.textContent = doc ? "The service keeps no text: index it from this page to see "
      + "where answers are." : "—";
    return;
  }
  const chars = Array.from(text); // code points, as the offsets count them
  const parts = [];
  let at = 0;
  for (const [start, end] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (start < at || end > chars.length) continue;
    parts.push(chars.slice(at, start).join(""));
    const mark = document.createElement("mark");
    mark.textContent = chars.slice(start, end).join("");
    parts.push(mark);
    at = end;
  }
  parts.push(chars.slice(at).join(""));
  view.replaceChildren(...parts);
  const first = view.querySelector("mark");
  if (first) first.scrollIntoView({ block: "nearest" });
}

async function loadDocuments(selected) {
  try {
    const body = (await api("GET", "/v1/documents?limit=200")).body;
    const options = body.documents.map((d) => {
      const option = document.createElement("option");
      option.value = d.id;
      option.textContent = `${d.id} (${d.status})`;
      return option;
    });
    const none = document.createElement("option");
    none.value = "";
    none.textContent = body.documents.length ? "—" : "none yet";
    $("documents").replaceChildren(none, ...options);
    $("documents").value = selected || "";
  } catch (_) { /* a key is needed, or the service is away: the list stays as it was */ }
}

function showIndexed(doc) {
  const stored = Object.entries(doc.bytes_stored)
    .map(([mode, n]) => `${mode} ${n.toLocaleString()} B`).join(", ");
  setStatus("indexed", `${doc.id}: indexed — ${doc.tokens} tokens, ` +
    `${doc.entities} entities; stored ${stored}`);
}

async function useDocument(doc) {
  current = doc.status === "indexed" ? doc : null;
  $("ask").disabled = current === null;
  $("answers").replaceChildren();
  showInText(current, []);
  if (current === null) return;
  showIndexed(current);
  await showEntities(current.id);
}

async function pickDocument() {
  const id = $("documents").value;
  showError(null);
  if (!id) return;
  $("entities").textContent = "—";
  try {
    const doc = await pollStatus((await api("GET", docPath(id))).body.id);
    if (doc.status === "failed") {
      setStatus("failed", `${doc.id}: failed — ${doc.error || "no reason given"}`);
    }
    await useDocument(doc);
  } catch (error) {
    current = null;
    $("ask").disabled = true;
    setStatus("failed", `${id}: ${error.message} (${error.code})`);
  }
}

async function indexDocument() {
  showError(null);
  const text = $("text").value;
  if (!text.trim()) { showError(new Error("paste a document or choose a file first")); return; }
  const body = { text };
  if ($("doc-id").value.trim()) body.id = $("doc-id").value.trim();
  // A new document: nothing of the last one stays on the page, answered or not.
  current = null;
  $("index").disabled = true;
  $("ask").disabled = true;
  $("answers").replaceChildren();
  $("entities").textContent = "—";
  showInText(null, []);
  setStatus("queued", "posting…");
  try {
    const accepted = (await api("POST", "/v1/documents", body)).body.documents[0];
    rememberText(accepted.id, accepted.text_hash, text);
    const doc = await pollStatus(accepted.id);
    if (doc.status === "failed") {
      setStatus("failed", `${doc.id}: failed — ${doc.error || "no reason given"}`);
    }
    await useDocument(doc);
    await loadDocuments(doc.id);
  } catch (error) {
    // The one place this error is shown: where the status of the document would be.
    setStatus("failed", `not indexed: ${error.message} (${error.code || "error"})`);
  } finally {
    $("index").disabled = false;
  }
}

// Polls until indexed or failed, showing how long it has waited and, when the service can
// tell, why it still waits (no worker reads the queue).
async function pollStatus(id) {
  const started = performance.now();
  for (;;) {
    const status = (await api("GET", docPath(id))).body;
    if (status.status === "indexed" || status.status === "failed") return status;
    const waited = ((performance.now() - started) / 1000).toFixed(0);
    const why = status.waiting ? ` — ${status.waiting}` : "";
    setStatus("queued", `${id}: ${status.status}, ${waited} s${why}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

async function showEntities(id) {
  try {
    const body = (await api("GET", `${docPath(id)}/entities`)).body;
    const chips = body.entities.map((e) => {
      const chip = document.createElement("span");
      chip.textContent = `${e.entity} ×${e.mentions}`;
      return chip;
    });
    $("entities").replaceChildren(...chips);
    if (body.unplaced && body.unplaced.length) {
      $("entities").append(` (not placed: ${body.unplaced.join(", ")})`);
    }
  } catch (error) {
    // A 404 that is not about the document: this server has no entities route yet.
    if (error.status === 404 && error.code !== "document_not_found") {
      $("entities").textContent = "not available on this server";
    } else {
      $("entities").textContent = `not available: ${error.message}`;
    }
  }
}

async function ask() {
  showError(null);
  const question = $("question").value.trim();
  const modes = [...document.querySelectorAll("input[name=mode]:checked")].map((b) => b.value);
  if (!current || !question || !modes.length) {
    showError(new Error("index a document, type a question and choose at least one mode"));
    return;
  }
  const topK = parseInt($("top-k").value, 10) || 3;
  const columns = modes.map((mode) => {
    const column = document.createElement("div");
    column.className = "mode";
    column.dataset.mode = mode;
    column.innerHTML = `<h3></h3><p class="meta">asking…</p>`;
    column.querySelector("h3").textContent = mode;
    return column;
  });
  $("answers").replaceChildren(...columns);
  showInText(current, []);
  $("ask").disabled = true;
  // One request per mode, all at once: each column times its own request.
  const errors = await Promise.all(
    modes.map((mode, i) => askMode(current, question, mode, topK, columns[i])));
  // The same error from every mode (a question the service cannot read): said once.
  const messages = new Set(errors.map((e) => e && `${e.message} (${e.code})`));
  if (messages.size === 1 && errors[0]) {
    $("answers").replaceChildren();
    showError(errors[0]);
  } else {
    errors.forEach((error, i) => {
      if (!error) return;
      columns[i].classList.add("error");
      columns[i].querySelector(".meta").textContent = `${error.message} (${error.code})`;
    });
  }
  const top = document.querySelector("#answers tr.answer");
  if (top) top.click(); // the first mode's best answer, shown in the text
  $("ask").disabled = false;
}

function showAnswer(row, spans) {
  document.querySelectorAll("#answers tr.answer.shown").forEach((r) => r.classList.remove("shown"));
  row.classList.add("shown");
  showInText(current, spans);
}

// One mode's answers into its column; resolves the error, or null.
async function askMode(doc, question, mode, topK, column) {
  let response;
  try {
    response = await api("POST", `${docPath(doc.id)}/answers`,
      { queries: [question], mode, top_k: topK });
  } catch (error) {
    return error;
  }
  const { body, clientMs, serverMs } = response;
  const result = body.results[0];
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const label of ["answer", "score", "support", "share"]) {
    const th = document.createElement("th");
    th.textContent = label;
    head.append(th);
  }
  for (const answer of result.answers) {
    const row = table.insertRow();
    row.className = "answer";
    row.title = "show where the text names it";
    row.insertCell().textContent = answer.entity;
    const score = row.insertCell();
    score.className = "score";
    score.title = "its probability; for a question asked in words, the best guide to whether it is right";
    score.textContent = answer.score.toFixed(3);
    const support = row.insertCell();
    support.className = "support";
    support.textContent = answer.support === null || answer.support === undefined
      ? "–" : answer.support.toFixed(2);
    const share = row.insertCell();
    share.className = "support";
    share.title = "its share of the support among the likeliest answers: near 1, the text singles it out";
    share.textContent = answer.support_share === null || answer.support_share === undefined
      ? "–" : answer.support_share.toFixed(2);
    row.addEventListener("click", () => showAnswer(row, answer.spans || []));
  }
  const meta = document.createElement("p");
  meta.className = "meta";
  const bytes = doc.bytes_stored[mode];
  meta.textContent = [
    `${clientMs.toFixed(1)} ms round trip`,
    serverMs === null ? null : `server ${serverMs.toFixed(2)} ms`,
    bytes === undefined ? null : `${bytes.toLocaleString()} B stored`,
    result.read ? "read by the pair reader" : null,
    body.model_id,
  ].filter(Boolean).join(" · ");
  const parts = [table, meta];
  if (result.cloze && result.cloze !== result.query) {
    const cloze = document.createElement("p");
    cloze.className = "cloze";
    cloze.textContent = `asked as: ${result.cloze}`;
    parts.unshift(cloze);
  }
  column.replaceChildren(column.querySelector("h3"), ...parts);
  return null;
}

$("file").addEventListener("change", async () => {
  const file = $("file").files[0];
  if (!file) return;
  $("text").value = await file.text();
  if (!$("doc-id").value) $("doc-id").value = file.name.replace(/\.[^.]*$/, "").replace(/[^A-Za-z0-9._:-]/g, "-");
});
$("index").addEventListener("click", indexDocument);
$("documents").addEventListener("change", pickDocument);
$("ask").addEventListener("click", ask);
$("question").addEventListener("keydown", (e) => { if (e.key === "Enter" && !$("ask").disabled) ask(); });
$("api-key").addEventListener("change", () => loadDocuments($("documents").value));
loadModes();
loadDocuments();
