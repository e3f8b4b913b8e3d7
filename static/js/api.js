// REST client: bearer token from sessionStorage (shared with this browser's other tabs),
// the error envelope as ApiError, and one place where a 401 sends the user back to sign-in.

import { rules } from './rules.js';

const TOKEN_KEY = 'hypd.token';

export const session = {
  token: sessionStorage.getItem(TOKEN_KEY),
  user: null, // {name, role} once whoami answered
};

// The session is this browser's, not one tab's: a new tab asks the tabs already open
// (BroadcastChannel: this origin only) for their token, and signing out in one tab signs
// out every tab. The token lives in each tab's sessionStorage only: never in a URL, never
// in storage that outlives the browser session.
const CHANNEL = typeof BroadcastChannel === 'function' ? new BroadcastChannel('hypd.session') : null;
const ASK_MS = 250;
let signedOutElsewhere = () => {};

if (CHANNEL) {
  CHANNEL.onmessage = (ev) => {
    const msg = ev.data || {};
    if (msg.type === 'ask' && session.token) CHANNEL.postMessage({ type: 'token', token: session.token });
    if (msg.type === 'signout' && session.token) {
      clearSession(false);
      signedOutElsewhere();
    }
  };
}

export function onSignedOutElsewhere(fn) {
  signedOutElsewhere = fn;
}

/** The token of another open tab of this browser, or null (none answered soon). */
export function tokenFromOtherTabs() {
  if (!CHANNEL) return Promise.resolve(null);
  return new Promise((resolve) => {
    const ask = new BroadcastChannel('hypd.session');
    const done = (token) => { ask.close(); resolve(token); };
    const timer = setTimeout(() => done(null), ASK_MS);
    ask.onmessage = (ev) => {
      if (ev.data && ev.data.type === 'token' && ev.data.token) {
        clearTimeout(timer);
        done(ev.data.token);
      }
    };
    ask.postMessage({ type: 'ask' });
  });
}

export function saveSession(token, user) {
  session.token = token;
  session.user = user;
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function clearSession(everywhere = true) {
  session.token = null;
  session.user = null;
  sessionStorage.removeItem(TOKEN_KEY);
  if (everywhere && CHANNEL) CHANNEL.postMessage({ type: 'signout' });
}

/** Whether the signed-in token may make this change: an operator's, and for a team
 *  member's token only its team's work (`teamWork`: submitting and deleting its jobs). */
export function canMutate(teamWork = false) {
  const user = session.user;
  return !!user && user.role === rules.role.OPERATOR && (!user.team || teamWork);
}

/** Whether the signed-in token may change one piece of work of `team` (null: no team's):
 *  an operator outside any team may change any; a member only its own team's. */
export function canChangeWorkOf(team) {
  const user = session.user;
  return canMutate(true) && (!user.team || team === user.team);
}

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

export function isAbort(err) {
  return !!err && (err.name === 'AbortError' || err.code === 'aborted');
}

let unauthorizedHandler = () => {};
export function onUnauthorized(fn) {
  unauthorizedHandler = fn;
}
export function signalUnauthorized(err) {
  unauthorizedHandler(err);
}

/**
 * Call the API. Returns the parsed JSON body of a 2xx reply (or null when empty).
 * Throws ApiError built from {"error": {"code", "message", "details"}} otherwise.
 * opts: method, body (JSON-serialised), headers, signal, token (explicit token: used by
 * sign-in; a 401 with an explicit token does not trigger the global sign-out), as ('text':
 * return a 2xx body as it came, e.g. the kubeconfig file).
 */
export async function api(path, opts = {}) {
  const { method = 'GET', body, headers = {}, signal, token, as = 'json' } = opts;
  const h = { Accept: 'application/json', ...headers };
  const tok = token !== undefined ? token : session.token;
  if (tok) h.Authorization = `Bearer ${tok}`;
  let payload;
  if (body !== undefined) {
    h['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, {
      method, headers: h, body: payload, signal, cache: 'no-store', credentials: 'same-origin',
    });
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(0, 'network_error', 'Cannot reach the hypd server. Check that it is running and that your tunnel is up.', {});
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (res.ok) return as === 'text' ? text : data;

  const env = data && typeof data === 'object' && data.error && typeof data.error === 'object' ? data.error : {};
  const err = new ApiError(
    res.status,
    env.code || `http_${res.status}`,
    env.message || `${res.status} ${res.statusText || 'error'} from ${method} ${path}`,
    env.details && typeof env.details === 'object' ? env.details : {},
  );
  if (res.status === 401 && token === undefined) unauthorizedHandler(err);
  throw err;
}

/** UUID v4 for Idempotency-Key: crypto.randomUUID needs a secure context, so fall back. */
export function uuid4() {
  if (globalThis.crypto && typeof crypto.randomUUID === 'function') {
    try { return crypto.randomUUID(); } catch { /* insecure context */ }
  }
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = Array.from(b, (v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * Flatten `error.details` of a validation error into {field: message}.
 * Accepts {"name": ["..."]}, {"json": {"name": [...]}}, {"fields": {...}} and nested
 * {"availability_zones": {"0": ["..."]}} (→ "availability_zones.0").
 */
export function fieldErrors(details) {
  const out = {};
  const wrappers = new Set(['json', 'query', 'form', 'body', 'fields', 'errors', 'field_errors']);
  const walk = (obj, prefix) => {
    if (!obj || typeof obj !== 'object') return;
    for (const [k, v] of Object.entries(obj)) {
      if (!prefix && wrappers.has(k) && v && typeof v === 'object' && !Array.isArray(v)) {
        walk(v, prefix);
        continue;
      }
      const key = prefix ? `${prefix}.${k}` : k;
      if (Array.isArray(v)) {
        const strs = v.filter((x) => typeof x === 'string');
        if (strs.length) out[key] = strs.join(' ');
        v.forEach((x, i) => { if (x && typeof x === 'object') walk(x, `${key}.${i}`); });
      } else if (typeof v === 'string') {
        out[key] = v;
      } else if (v && typeof v === 'object') {
        walk(v, key);
      }
    }
  };
  walk(details, '');
  return out;
}

/**
 * A mutating caller that keeps one Idempotency-Key per request: the same request sent again
 * (a retried click after a network error or a 5xx) reuses it, so the server answers the
 * operation it already made; a refused request (4xx) or a different one gets a new key.
 * call(path, {method = 'POST', body, signal}) → the reply body.
 */
export function mutator() {
  let pending = null; // {sig, key}
  return async (path, { method = 'POST', body, signal } = {}) => {
    const sig = `${method} ${path} ${JSON.stringify(body === undefined ? null : body)}`;
    if (!pending || pending.sig !== sig) pending = { sig, key: uuid4() };
    try {
      const reply = await api(path, { method, body, signal, headers: { 'Idempotency-Key': pending.key } });
      pending = null;
      return reply;
    } catch (e) {
      if (e.status && e.status < 500) pending = null;
      throw e;
    }
  };
}
