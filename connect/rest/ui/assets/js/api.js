// The REST API, and the only place that talks to it. Paths are relative to the API root,
// which is the page's parent ("../" from /ui/), so the console also works behind a proxy
// that mounts the worker under a prefix.
//
// Authentication: with basic auth on, the user signs in through the page's own form; the
// credentials live in sessionStorage (gone with the tab) and go out in the Authorization
// header. Requests are sent with credentials "omit": the browser then neither adds
// credentials it cached nor shows its own login prompt on a 401 (which has no way out).

const ROOT = new URL("../", document.baseURI);
const STORAGE_KEY = "tributary.console.auth";
const unauthorizedListeners = new Set();

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

function encodeBasic(user, password) {
  const raw = new TextEncoder().encode(`${user}:${password}`);
  let text = "";
  for (const byte of raw) text += String.fromCharCode(byte);
  return btoa(text);
}

export function signIn(user, password) {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ user, token: encodeBasic(user, password) }));
}

export function signOut() {
  sessionStorage.removeItem(STORAGE_KEY);
}

export function currentUser() {
  try {
    return JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "null")?.user ?? null;
  } catch {
    return null;
  }
}

function token() {
  try {
    return JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "null")?.token ?? null;
  } catch {
    return null;
  }
}

/** Call fn whenever the API answers 401 (the page then asks the user to sign in). */
export function onUnauthorized(fn) {
  unauthorizedListeners.add(fn);
}

export async function request(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const auth = token();
  if (auth) headers.Authorization = `Basic ${auth}`;
  const response = await fetch(new URL(path.replace(/^\/+/, ""), ROOT), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
  });
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (response.status === 401) {
    for (const fn of unauthorizedListeners) fn();
    throw new ApiError(401, "Sign in to continue.", data);
  }
  if (!response.ok) {
    const message = (data && data.message) || `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message, data);
  }
  return data;
}

// GETs started before the views' modules had loaded (prefetch.js), each taken once.
const prefetched = new Map();

/** Start a GET now; the next api.get of the same path takes its answer. */
export function prefetch(path) {
  const pending = request("GET", path);
  pending.catch(() => {}); // handled when taken; never an unhandled rejection
  prefetched.set(path, pending);
}

function get(path) {
  const early = prefetched.get(path);
  if (!early) return request("GET", path);
  prefetched.delete(path);
  return early.catch((exc) => {
    // The 401 came before anyone listened: tell the listeners now.
    if (exc instanceof ApiError && exc.status === 401) for (const fn of unauthorizedListeners) fn();
    throw exc;
  });
}

export const api = {
  get,
  post: (path, body) => request("POST", path, body),
  put: (path, body) => request("PUT", path, body),
  patch: (path, body) => request("PATCH", path, body),
  del: (path) => request("DELETE", path),
};

/** One path segment (connector names may hold any character). */
export const seg = encodeURIComponent;
