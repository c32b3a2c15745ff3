// The demo page: the public API only, from this origin; no build step, nothing fetched
// from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const DEFAULT_CHECKED = ["linear", "softmax"];
const FALLBACK_MODES = ["none", "linear", "gated", "softmax", "mentions"];
let current = null; // the indexed document's status (GET /v1/documents/{id})

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
}

async function indexDocument() {
  showError(null);
  const text = $("text").value;
  if (!text.trim()) { showError(new Error("paste a document or choose a file first")); return; }
  const body = { text };
  if ($("doc-id").value.trim()) body.id = $("doc-id").value.trim();
  $("index").disabled = true;
  $("ask").disabled = true;
  $("answers").replaceChildren();
  $("entities").textContent = "—";
  try {
    const accepted = (await api("POST", "/v1/documents", body)).body.documents[0];
    setStatus(accepted.status, `${accepted.id}: ${accepted.status}`);
    current = await pollStatus(accepted.id);
    if (current.status === "indexed") {
      const stored = Object.entries(current.bytes_stored)
        .map(([mode, n]) => `${mode} ${n.toLocaleString()} B`).join(", ");
      setStatus("indexed", `${current.id}: indexed — ${current.tokens} tokens, ` +
        `${current.entities} entities; stored ${stored}`);
      $("ask").disabled = false;
      await showEntities(current.id);
    } else {
      setStatus("failed", `${current.id}: failed — ${current.error || "no reason given"}`);
    }
  } catch (error) {
    showError(error);
  } finally {
    $("index").disabled = false;
  }
}

async function pollStatus(id) {
  for (;;) {
    const status = (await api("GET", docPath(id))).body;
    if (status.status === "indexed" || status.status === "failed") return status;
    setStatus(status.status, `${id}: ${status.status}…`);
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
  $("ask").disabled = true;
  // One request per mode, all at once: each column times its own request.
  await Promise.all(modes.map((mode, i) => askMode(current, question, mode, topK, columns[i])));
  $("ask").disabled = false;
}

async function askMode(doc, question, mode, topK, column) {
  try {
    const { body, clientMs, serverMs } = await api("POST", `${docPath(doc.id)}/answers`,
      { queries: [question], mode, top_k: topK });
    const result = body.results[0];
    const table = document.createElement("table");
    for (const answer of result.answers) {
      const row = table.insertRow();
      row.className = "answer";
      row.insertCell().textContent = answer.entity;
      const score = row.insertCell();
      score.className = "score";
      score.textContent = answer.score.toFixed(3);
    }
    const meta = document.createElement("p");
    meta.className = "meta";
    const bytes = doc.bytes_stored[mode];
    meta.textContent = [
      `${clientMs.toFixed(1)} ms round trip`,
      serverMs === null ? null : `server ${serverMs.toFixed(2)} ms`,
      bytes === undefined ? null : `${bytes.toLocaleString()} B stored`,
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
  } catch (error) {
    column.classList.add("error");
    column.querySelector(".meta").textContent = `${error.message} (${error.code})`;
  }
}

$("file").addEventListener("change", async () => {
  const file = $("file").files[0];
  if (!file) return;
  $("text").value = await file.text();
  if (!$("doc-id").value) $("doc-id").value = file.name.replace(/\.[^.]*$/, "").replace(/[^A-Za-z0-9._:-]/g, "-");
});
$("index").addEventListener("click", indexDocument);
$("ask").addEventListener("click", ask);
$("question").addEventListener("keydown", (e) => { if (e.key === "Enter" && !$("ask").disabled) ask(); });
loadModes();
