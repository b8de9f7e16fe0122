// The console's shell: routing by URL hash, the polling loop, sign-in, the live indicator.
//
// Every view is a module with mount(container, params, ctx) → {refresh(), unmount?()}.
// The shell calls refresh() at once and then every POLL_MS while the tab is visible; a
// refresh still running is never overlapped by the next.

import { ApiError, api, currentUser, onUnauthorized, signIn, signOut } from "./api.js";
import { fill, h } from "./dom.js";
import { ago } from "./format.js";
import { closeModal, toast } from "./ui.js";
import * as connectorView from "./views/connector.js";
import * as connectorsView from "./views/connectors.js";
import { openCreate } from "./views/editor.js";
import * as schemasView from "./views/schemas.js";
import * as topicsView from "./views/topics.js";
import * as workersView from "./views/workers.js";

const POLL_MS = 2000;

const ROUTES = [
  [/^#\/connectors\/([^/]+)(?:\/([a-z]+))?$/, connectorView, (m) => ({ name: decodeURIComponent(m[1]), tab: m[2] || "overview" })],
  [/^#\/topics$/, topicsView, () => ({})],
  [/^#\/schemas(?:\/([^/]+))?(?:\/(\d+))?$/, schemasView, (m) => ({ subject: m[1] && decodeURIComponent(m[1]), version: m[2] })],
  [/^#\/workers$/, workersView, () => ({})],
  [/^#\/connectors$/, connectorsView, () => ({})],
];

const state = { view: null, timer: null, busy: false, lastOk: null, error: null, locked: false, generation: 0 };

const ctx = {
  navigate(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
  /** Refresh the current view now (after an action). */
  refresh() {
    return tick(true);
  },
  /** Sidebar counters: {connectors, failed}. */
  counts({ connectors, failed }) {
    fill(document.getElementById("nav-count-connectors"), String(connectors));
    const bad = document.getElementById("nav-count-failed");
    bad.hidden = !failed;
    fill(bad, String(failed));
  },
};

function currentRoute() {
  const hash = location.hash || "#/connectors";
  for (const [pattern, view, params] of ROUTES) {
    const m = hash.match(pattern);
    if (m) return { view, params: params(m), section: hash.split("/")[1] };
  }
  return { view: connectorsView, params: {}, section: "connectors" };
}

function route() {
  closeModal();
  if (state.view?.unmount) state.view.unmount();
  const { view, params, section } = currentRoute();
  for (const link of document.querySelectorAll(".nav a")) {
    link.classList.toggle("active", link.dataset.section === section);
  }
  const container = document.getElementById("view");
  fill(container);
  state.generation += 1;
  state.view = view.mount(container, params, ctx);
  tick(true);
}

async function tick(force = false) {
  if (state.locked || !state.view) return;
  if (!force && (state.busy || document.visibilityState !== "visible")) return;
  const generation = state.generation;
  state.busy = true;
  try {
    await state.view.refresh();
    if (generation === state.generation) {
      state.lastOk = Date.now();
      state.error = null;
    }
  } catch (exc) {
    if (!(exc instanceof ApiError && exc.status === 401)) {
      state.error = exc instanceof ApiError ? exc.message : "The worker does not answer.";
    }
  } finally {
    state.busy = false;
    live();
  }
}

function live() {
  const el = document.getElementById("live");
  el.classList.toggle("live-error", Boolean(state.error));
  const text = state.error ? `Connection problem: ${state.error}` : state.lastOk ? `Live · updated ${ago(state.lastOk)}` : "Connecting…";
  fill(el, h("i", { class: "live-dot" }), text);
}

// ------------------------------------------------------------------ sign-in

function showLogin(message) {
  state.locked = true;
  const overlay = document.getElementById("login");
  overlay.hidden = false;
  const error = document.getElementById("login-error");
  error.hidden = !message;
  error.textContent = message || "";
  document.getElementById("login-user").focus();
}

async function submitLogin(event) {
  event.preventDefault();
  const user = document.getElementById("login-user").value;
  const password = document.getElementById("login-password").value;
  signIn(user, password);
  try {
    await api.get("ops/workers");
  } catch (exc) {
    signOut();
    showLogin(exc instanceof ApiError && exc.status === 401 ? "Wrong user name or password." : exc.message);
    return;
  }
  document.getElementById("login").hidden = true;
  document.getElementById("login-password").value = "";
  state.locked = false;
  account();
  route();
  workerInfo();
}

function account() {
  const user = currentUser();
  const el = document.getElementById("account");
  if (!user) {
    el.hidden = true;
    return;
  }
  el.hidden = false;
  fill(
    el,
    h("span", { class: "account-user", title: "Signed in" }, user),
    h("button", {
      type: "button",
      class: "link",
      "data-action": "sign-out",
      onclick: () => {
        signOut();
        el.hidden = true;
        showLogin("Signed out.");
      },
    }, "Sign out"),
  );
}

async function workerInfo() {
  try {
    const { workers } = await api.get("ops/workers");
    const me = workers.find((w) => w.this) || workers[0];
    if (me) fill(document.getElementById("worker-info"), h("span", { class: "mono" }, me.id), me.version ? ` · v${me.version}` : "");
  } catch {
    // the views report connection problems; the footer just stays empty
  }
}

// ------------------------------------------------------------------ boot

onUnauthorized(() => {
  if (!state.locked) showLogin(currentUser() ? "Your session was refused; sign in again." : null);
});
document.getElementById("login-form").addEventListener("submit", submitLogin);
document.getElementById("new-connector").addEventListener("click", () => openCreate(ctx).catch((e) => toast(e.message, "error")));
window.addEventListener("hashchange", route);
// A menu (<details class="menu">) closes on a click outside it or on one of its items.
document.addEventListener("click", (event) => {
  for (const menu of document.querySelectorAll("details.menu[open]")) {
    if (!menu.contains(event.target) || event.target.closest(".menu-items")) menu.open = false;
  }
});
document.addEventListener("visibilitychange", () => tick());
setInterval(() => tick(), POLL_MS);
setInterval(live, 1000);
account();
route();
workerInfo();
