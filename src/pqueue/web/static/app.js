// pqueue dashboard: a small script over the JSON API, no build step and no dependencies.
// The token lives in this tab's sessionStorage and goes out only as an Authorization
// header, so there is no cookie and no CSRF surface (ADR 0096). Data is written with
// textContent, never as HTML. It can open already signed in (ADR 0160): from a one-time
// link, /#signin=<code>, traded once for a session token; or, with no token stored, from
// an Authorization header the browser adds by itself (Playwright, a proxy).
"use strict";

const BASE = new URL(".", location.href);  // the app may be mounted under a prefix
const KEY = "pqueue.token";
const LINK = "#signin=";
const STATUSES = ["waiting", "pending", "scheduled", "active", "retry", "completed", "dead"];
const CANCELLABLE = ["pending", "scheduled", "retry", "active", "waiting"];
const HISTORY_SECONDS = 300;
const POLL_MS = 2000;
const history = new Map();  // queue -> [[time ms, done/s], ...] for the sparkline
let role = null;
let timer = null;
let deadQueue = "";
let noSchedules = false;  // the server answered 404 for GET /schedules: stop asking

const $ = (selector) => document.querySelector(selector);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? body.detail : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error;
  }
}

async function api(method, path, body) {
  const token = sessionStorage.getItem(KEY);
  const headers = token ? { Authorization: `Bearer ${token}` } : {};  // none: the browser's own, if any
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(new URL(path, BASE), {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

function say(text, bad = false) {
  const node = $("#message");
  node.textContent = text;
  node.className = bad ? "error" : "muted";
}

function confirmAction(text) {
  const dialog = $("#confirm");
  $("#confirm-text").textContent = text;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true }));
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  if (seconds < 3600) return `${(seconds / 60).toFixed(1)}m`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)}h`;
  return `${(seconds / 86400).toFixed(1)}d`;
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "-";
}

// -- signing in ------------------------------------------------------------------------

// token: null signs in with what the browser sends by itself (a header set outside the page).
async function signIn(token) {
  if (token) sessionStorage.setItem(KEY, token);
  try {
    role = (await api("GET", "session")).role;
  } catch (error) {
    sessionStorage.removeItem(KEY);
    role = null;
    throw error;
  }
  $("#login").hidden = true;
  $("#nav").hidden = false;
  $("#role").textContent = role === "admin" ? "admin" : "read-only";
  $("#nav-enqueue").hidden = role !== "admin";
  document.body.classList.toggle("read-only", role !== "admin");
  route();
}

function signOut() {
  sessionStorage.removeItem(KEY);
  role = null;
  clearTimeout(timer);
  for (const view of document.querySelectorAll(".view")) view.hidden = true;
  $("#nav").hidden = true;
  $("#login").hidden = false;
  say("");
}

// -- views -----------------------------------------------------------------------------

function show(name) {
  clearTimeout(timer);
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== `view-${name}`;
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("current", link.getAttribute("href") === `#${name}`);
  }
}

async function route() {
  if (!role) return;
  say("");
  const [name, arg] = location.hash.slice(1).split("/");
  try {
    if (name === "workers") { show("workers"); await poll(loadWorkers); }
    else if (name === "dead") { show("dead"); await loadDead(); }
    else if (name === "job" && arg) { show("job"); await loadJob(decodeURIComponent(arg)); }
    else if (name === "enqueue" && role === "admin") { show("enqueue"); }
    else { show("queues"); await poll(loadQueues); }
  } catch (error) {
    failed(error);
  }
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) { signOut(); $("#login-error").textContent = error.message; return; }
  say(error.message, true);
}

// Poll again only after the previous answer arrived: slow answers never pile up.
async function poll(load) {
  const current = location.hash;
  try {
    await load();
  } catch (error) {
    failed(error);
  }
  if (role && location.hash === current) timer = setTimeout(() => poll(load), POLL_MS);
}

async function loadQueues() {
  const [{ queues }, { workers }] = await Promise.all([api("GET", "queues"), api("GET", "workers")]);
  const names = workers.map((w) => `${w.id} (${w.host}, pid ${w.pid}, ${w.queues.join("/")})`);
  $("#live-workers").textContent = workers.length
    ? `${workers.length} live worker${workers.length === 1 ? "" : "s"}: ${names.join("; ")}`
    : "No live workers.";
  const now = Date.now();
  const body = $("#queues tbody");
  body.replaceChildren();
  for (const queue of queues) {
    const points = (history.get(queue.name) || []).filter(([t]) => now - t <= HISTORY_SECONDS * 1000);
    points.push([now, queue.done_per_second]);
    history.set(queue.name, points);
    const row = el("tr", { "data-queue": queue.name }, el("td", { text: queue.name }));
    for (const status of STATUSES) {
      row.append(el("td", { class: "num", "data-status": status, text: String(queue.jobs[status] || 0) }));
    }
    row.append(el("td", { class: "num", text: queue.done_per_second.toFixed(2) }));
    row.append(el("td", { class: "num", text: age(queue.oldest_pending_age) }));
    row.append(el("td", {}, sparkline(points, now)));
    row.append(el("td", { "data-state": queue.paused ? "paused" : "running", class: queue.paused ? "error" : "muted", text: queue.paused ? "paused" : "running" }));
    const action = queue.paused ? "resume" : "pause";
    row.append(el("td", { class: "admin" },
      el("button", { type: "button", "data-action": action, text: queue.paused ? "Resume" : "Pause", onclick: () => switchQueue(queue.name, action) })));
    body.append(row);
  }
  if (!queues.length) body.append(el("tr", {}, el("td", { colspan: "12", class: "muted", text: "No queues yet." })));
  $("#updated").textContent = `Updated ${new Date(now).toLocaleTimeString()}; every ${POLL_MS / 1000} s.`;
  await loadSchedules();
}

// Pause or resume a queue (admin); the table is drawn again from the answer.
async function switchQueue(name, action) {
  try {
    const { changed } = await api("POST", `queues/${encodeURIComponent(name)}/${action}`);
    const done = action === "pause" ? "paused" : "resumed";
    say(changed ? `Queue ${name} ${done}.` : `Queue ${name} was already ${done}.`);
    await loadQueues();
  } catch (error) { failed(error); }
}

// The schedules panel is read-only and optional: a server without GET /schedules (404)
// simply has no panel.
async function loadSchedules() {
  const panel = $("#schedules-panel");
  if (noSchedules) return;
  let schedules;
  try {
    ({ schedules } = await api("GET", "schedules"));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) { noSchedules = true; panel.hidden = true; return; }
    throw error;
  }
  const body = $("#schedules tbody");
  body.replaceChildren();
  for (const s of schedules || []) {
    const every = s.every === null || s.every === undefined ? "-" : `every ${age(Number(s.every))}`;
    body.append(el("tr", { "data-schedule": s.name },
      el("td", { text: s.name }), el("td", { text: s.type }), el("td", { text: s.queue }),
      el("td", { text: s.cron ? `cron ${s.cron}` : every }), el("td", { text: s.tz || "-" }),
      el("td", { text: when(s.next_run_at) }), el("td", { text: when(s.last_run_at) }),
      el("td", { class: "num", text: String(s.missed ?? 0) }), el("td", { text: s.catch_up ? "yes" : "no" })));
  }
  if (!body.children.length) body.append(el("tr", {}, el("td", { colspan: "9", class: "muted", text: "No schedules." })));
  panel.hidden = false;
}

function sparkline(points, now) {
  const width = 160, height = 28;
  const top = Math.max(1, ...points.map(([, v]) => v));
  const xy = points.map(([t, v]) => {
    const x = width - ((now - t) / (HISTORY_SECONDS * 1000)) * width;
    return `${x.toFixed(1)},${(height - 2 - (v / top) * (height - 4)).toFixed(1)}`;
  });
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `peak ${top.toFixed(2)} jobs/s`);
  const base = document.createElementNS(ns, "line");
  base.setAttribute("x1", 0);
  base.setAttribute("x2", width);
  base.setAttribute("y1", height - 1);
  base.setAttribute("y2", height - 1);
  svg.append(base);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", xy.join(" "));
  svg.append(line);
  return svg;
}

async function loadWorkers() {
  const { workers } = await api("GET", "workers");
  const body = $("#workers tbody");
  body.replaceChildren();
  for (const w of workers) {
    body.append(el("tr", {},
      el("td", { text: w.id }), el("td", { text: w.host }), el("td", { class: "num", text: String(w.pid) }),
      el("td", { text: w.queues.join(", ") }), el("td", { class: "num", text: String(w.concurrency) }),
      el("td", { text: when(w.started_at) }), el("td", { text: when(w.last_seen) })));
  }
  if (!workers.length) body.append(el("tr", {}, el("td", { colspan: "7", class: "muted", text: "No live workers." })));
}

function jobLink(id) {
  return el("a", { href: `#job/${encodeURIComponent(id)}`, text: id });
}

async function loadDead() {
  const params = new URLSearchParams({ status: "dead", limit: "100" });
  if (deadQueue) params.set("queue", deadQueue);
  const { jobs, next_cursor } = await api("GET", `jobs?${params}`);
  const body = $("#dead tbody");
  body.replaceChildren();
  for (const job of jobs) {
    const last = job.errors.length ? job.errors[job.errors.length - 1] : null;
    body.append(el("tr", { "data-job": job.id },
      el("td", {}, jobLink(job.id)), el("td", { text: job.type }), el("td", { text: job.queue }),
      el("td", { class: "error", text: last ? `${last.kind}: ${last.message}` : "-" }),
      el("td", { text: when(job.finished_at) }),
      el("td", { class: "admin" },
        el("button", { type: "button", text: "Requeue", onclick: () => requeue({ ids: [job.id] }, `Requeue job ${job.id}?`) }), " ",
        el("button", { type: "button", class: "danger", text: "Purge", onclick: () => purge({ ids: job.id }, `Delete dead job ${job.id} for good?`) }))));
  }
  if (!jobs.length) body.append(el("tr", {}, el("td", { colspan: "6", class: "muted", text: "No dead jobs." })));
  $("#dead-more").textContent = next_cursor ? "Showing the first 100." : "";
}

async function requeue(selection, question) {
  if (!(await confirmAction(question))) return;
  try {
    const { count } = await api("POST", "dead/requeue", selection);
    say(`Requeued ${count} job${count === 1 ? "" : "s"}.`);
    await refreshAfterAction();
  } catch (error) { failed(error); }
}

async function purge(filters, question) {
  if (!(await confirmAction(question))) return;
  try {
    const { count } = await api("DELETE", `dead?${new URLSearchParams(filters)}`);
    say(`Purged ${count} job${count === 1 ? "" : "s"}.`);
    await refreshAfterAction();
  } catch (error) { failed(error); }
}

async function refreshAfterAction() {
  const [name, arg] = location.hash.slice(1).split("/");
  if (name === "job" && arg) await loadJob(decodeURIComponent(arg));
  else await loadDead();
}

async function loadJob(id) {
  const job = await api("GET", `jobs/${encodeURIComponent(id)}`);
  $("#job-id").textContent = job.id;
  $("#job-status").textContent = job.status;
  $("#job-requeue").hidden = job.status !== "dead";
  $("#job-cancel").hidden = !CANCELLABLE.includes(job.status);
  const fields = $("#job-fields");
  fields.replaceChildren();
  for (const name of ["type", "queue", "priority", "attempt", "max_retries", "recoveries", "run_at", "created_at", "started_at", "finished_at", "unique_key", "idempotency_key"]) {
    const value = job[name];
    fields.append(el("dt", { text: name }), el("dd", { text: value === null ? "-" : String(value) }));
  }
  $("#job-payload").textContent = JSON.stringify(job.payload, null, 2);
  const errors = $("#job-errors");
  errors.replaceChildren();
  for (const error of job.errors.slice().reverse()) {
    errors.append(el("p", { class: "error", text: `attempt ${error.attempt}, ${when(error.at)}: ${error.kind}: ${error.message}` }));
    if (error.traceback) errors.append(el("pre", { text: error.traceback }));
  }
  if (!job.errors.length) errors.append(el("p", { class: "muted", text: "None." }));
}

// -- wiring ----------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("#login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("#login-error").textContent = "";
    try {
      await signIn($("#token").value.trim());
      $("#token").value = "";
    } catch (error) {
      $("#login-error").textContent = error.status === 401 ? "Wrong token." : error.message;
    }
  });
  $("#logout").addEventListener("click", signOut);
  $("#find").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = new FormData(event.target).get("id").trim();
    if (id) location.hash = `job/${encodeURIComponent(id)}`;
  });
  $("#dead-filter").addEventListener("submit", (event) => {
    event.preventDefault();
    deadQueue = new FormData(event.target).get("queue").trim();
    loadDead().catch(failed);
  });
  $("#requeue-all").addEventListener("click", () => {
    if (deadQueue) requeue({ queue: deadQueue }, `Requeue every dead job of queue ${deadQueue}?`);
    else requeue({}, "Requeue every dead job of every queue?");
  });
  $("#purge-all").addEventListener("click", () => {
    if (deadQueue) purge({ queue: deadQueue }, `Delete every dead job of queue ${deadQueue} for good?`);
    else purge({}, "Delete every dead job of every queue for good?");
  });
  $("#job-requeue").addEventListener("click", () => requeue({ ids: [$("#job-id").textContent] }, "Requeue this job?"));
  $("#job-cancel").addEventListener("click", async () => {
    const running = $("#job-status").textContent === "active";
    if (!(await confirmAction(running ? "Cancel this running job? Its handler is stopped." : "Cancel this job?"))) return;
    try {
      const { cancelled } = await api("DELETE", `jobs/${encodeURIComponent($("#job-id").textContent)}`);
      say(cancelled ? "Cancelled." : "Too late: the job has finished.", !cancelled);
      await loadJob($("#job-id").textContent);
    } catch (error) { failed(error); }
  });
  $("#enqueue-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    const out = $("#enqueue-result");
    try {
      const job = { type: form.get("type").trim(), payload: JSON.parse(form.get("payload") || "null") };
      if (form.get("queue").trim()) job.queue = form.get("queue").trim();
      if (form.get("delay")) job.delay = Number(form.get("delay"));
      if (form.get("max_retries")) job.max_retries = Number(form.get("max_retries"));
      const answer = await api("POST", "jobs", job);
      out.replaceChildren(`Enqueued (${answer.status}): `, jobLink(answer.id));
      out.className = "";
    } catch (error) {
      out.textContent = error instanceof SyntaxError ? `payload is not JSON: ${error.message}` : error.message;
      out.className = "error";
    }
  });
  window.addEventListener("hashchange", () => (location.hash.startsWith(LINK) ? signInByLink() : route()));
  if (location.hash.startsWith(LINK)) signInByLink();
  else signIn(sessionStorage.getItem(KEY)).catch(() => signOut());
});

// A one-time link: take the code out of the address bar and the tab's history first, then
// trade it for a session token (once; a reload cannot use it again).
async function signInByLink() {
  const code = location.hash.slice(LINK.length);
  window.history.replaceState(null, "", location.pathname + location.search);  // (history: the sparkline map)
  sessionStorage.removeItem(KEY);
  role = null;
  try {
    const opened = await api("POST", "session/redeem", { code: decodeURIComponent(code) });
    await signIn(opened.token);
  } catch (error) {
    signOut();
    $("#login-error").textContent = error.status === 401 ? "This sign-in link was already used, has expired or is unknown: ask for another." : error.message;
  }
}
