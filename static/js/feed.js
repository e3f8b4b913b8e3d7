// Live feed of one operation: WebSocket /ws/operations/<id> with first-message auth, resuming
// from the last event id on reconnect; long-polling GET /api/v1/operations/<id>?wait=20 when
// the WebSocket cannot be used.

import { api, session, isAbort, signalUnauthorized, ApiError } from './api.js';
import { rules } from './rules.js';

/** Compare Redis stream ids "ms-seq"; a missing id sorts first. */
export function cmpId(a, b) {
  if (a === b) return 0;
  if (!a) return -1;
  if (!b) return 1;
  const [am, as = '0'] = String(a).split('-');
  const [bm, bs = '0'] = String(b).split('-');
  const d = Number(am) - Number(bm);
  if (d) return d < 0 ? -1 : 1;
  const e = Number(as) - Number(bs);
  return e < 0 ? -1 : e > 0 ? 1 : 0;
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

/**
 * Long-poll one operation (GET /api/v1/operations/<id>?wait=10) until it is terminal, for a
 * view that follows its own change in place; `onChange(op)` sees each state read. Answers the
 * terminal operation, or null once `signal` aborts. A failed read is tried again after
 * `retryMs`.
 */
export async function waitOperation(opId, { signal, onChange, retryMs = 1500 } = {}) {
  while (!(signal && signal.aborted)) {
    try {
      const op = await api(`/api/v1/operations/${encodeURIComponent(opId)}?wait=10`, { signal });
      if (onChange) onChange(op);
      if (rules.finished.has(op.status)) return op;
    } catch (e) {
      if (isAbort(e)) return null;
      await sleep(retryMs, signal);
    }
  }
  return null;
}

/**
 * new OperationFeed(id, {onSnapshot(op), onEvent(id, event, {stale}), onMode(mode, info), onGone(err)})
 * modes: connecting | live | reconnecting | polling | closed
 */
export class OperationFeed {
  constructor(id, handlers) {
    this.id = id;
    this.h = handlers;
    this.lastEventId = null;   // newest event reflected in the state we hold
    this.lastStreamId = null;  // newest event received over the socket
    this.terminal = false;
    this.stopped = true;
    this.ws = null;
    this.mode = 'closed';
    this.retries = 0;        // reconnect attempts since the last message received
    this.openFailures = 0;   // consecutive sockets closed before their first message
    this.wantHistory = true; // first connection asks for all events (activity log)
    this.polling = false;
    this.abort = null;
    this.timer = null;
  }

  /** Start (or restart after a retry) following the operation. */
  start() {
    if (!this.stopped && (this.ws || this.polling || this.timer)) return;
    this.stopped = false;
    this.terminal = false;
    this.abort = new AbortController();
    if (this.forcePolling) this._poll();
    else this._connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = null;
    if (this.abort) this.abort.abort();
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      try { ws.close(1000); } catch { /* ignore */ }
    }
    this._mode('closed');
  }

  /** Apply an operation snapshot from any source; stale snapshots (older event id) are ignored. */
  snapshot(op, { force = false } = {}) {
    if (!op) return;
    const sid = op.last_event_id || null;
    if (!force && sid && this.lastEventId && cmpId(sid, this.lastEventId) < 0) return;
    if (sid && cmpId(sid, this.lastEventId) > 0) this.lastEventId = sid;
    this.terminal = rules.finished.has(op.status);
    this.h.onSnapshot(op);
  }

  _event(id, ev) {
    if (!ev) return;
    const stale = !!(id && this.lastEventId && cmpId(id, this.lastEventId) <= 0);
    if (!stale && id) this.lastEventId = id;
    if (id && cmpId(id, this.lastStreamId) > 0) this.lastStreamId = id;
    if (!stale && ev.type === 'operation' && rules.finished.has(ev.status)) this.terminal = true;
    this.h.onEvent(id, ev, { stale });
  }

  _mode(mode, info) {
    if (this.mode === mode && !info) return;
    this.mode = mode;
    if (this.h.onMode) this.h.onMode(mode, info);
  }

  _url() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${proto}//${location.host}/ws/operations/${encodeURIComponent(this.id)}`;
  }

  _connect() {
    if (this.stopped) return;
    this.timer = null;
    this._mode(this.retries ? 'reconnecting' : 'connecting');
    let ws;
    try {
      ws = new WebSocket(this._url());
    } catch {
      this._poll();
      return;
    }
    this.ws = ws;
    let gotMessage = false;
    ws.onopen = () => {
      const msg = { type: 'auth', token: session.token };
      // First connection: replay the operation's events for the activity log (they are
      // de-duplicated against the snapshot). Reconnects resume after the last event seen.
      // (The last event received on the stream, so the log has no hole where a snapshot
      // overtook the stream; anything older than the state we hold is only logged.)
      const after = this.wantHistory ? '0-0' : (this.lastStreamId || this.lastEventId);
      if (after) msg.after = after;
      ws.send(JSON.stringify(msg));
    };
    ws.onmessage = (m) => {
      let d;
      try { d = JSON.parse(m.data); } catch { return; }
      gotMessage = true;
      this.retries = 0;
      this.openFailures = 0;
      this.wantHistory = false;
      if (this.mode !== 'live') this._mode('live');
      if (d.type === 'operation') this.snapshot(d.operation);
      else if (d.type === 'event') this._event(d.id, d.event);
      // pings and unknown message types are ignored
    };
    ws.onerror = () => { /* onclose follows and decides */ };
    ws.onclose = (e) => {
      if (this.ws !== ws) return; // replaced or stopped
      this.ws = null;
      if (this.stopped) return;
      if (e.code === 4401) {
        this._mode('closed');
        signalUnauthorized(new ApiError(401, 'unauthorized', 'The live feed refused the token.', {}));
        return;
      }
      if (e.code === 4404) {
        this._mode('closed');
        if (this.h.onGone) this.h.onGone(new ApiError(404, 'not_found', `Operation ${this.id} does not exist.`, {}));
        return;
      }
      if (this.terminal) {
        this._mode('closed');
        return;
      }
      if (e.code === 4403) { // Origin refused: retrying the socket cannot help
        this._poll();
        return;
      }
      if (!gotMessage) {
        // Could not connect, or closed before it said anything (a proxy without WebSocket
        // support): after two such attempts, long-poll instead.
        this.openFailures += 1;
        if (this.openFailures >= 2) {
          this._poll();
          return;
        }
      }
      this.retries += 1;
      const delay = Math.min(500 * 2 ** (this.retries - 1), 10000);
      this._mode('reconnecting', { delay });
      this.timer = setTimeout(() => this._connect(), delay);
    };
  }

  async _poll() {
    if (this.polling || this.stopped) return;
    this.polling = true;
    this.forcePolling = true; // stay on polling for this page once the socket failed
    this._mode('polling');
    let backoff = 1000;
    try {
      while (!this.stopped && !this.terminal) {
        const q = new URLSearchParams({ wait: '20' });
        if (this.lastEventId) q.set('after', this.lastEventId);
        const before = this.lastEventId;
        const t0 = Date.now();
        try {
          const op = await api(`/api/v1/operations/${encodeURIComponent(this.id)}?${q}`, { signal: this.abort.signal });
          this.snapshot(op);
          if (this.h.onPolled) this.h.onPolled(op);
          backoff = 1000;
          if (this.lastEventId === before && Date.now() - t0 < 500) await sleep(1000, this.abort.signal); // server returned at once
        } catch (e) {
          if (isAbort(e) || this.stopped) return;
          if (e.status === 401) return; // global handler signs out
          if (e.status === 404) {
            if (this.h.onGone) this.h.onGone(e);
            return;
          }
          this._mode('polling', { error: e });
          await sleep(backoff, this.abort.signal);
          backoff = Math.min(backoff * 2, 15000);
        }
      }
    } finally {
      this.polling = false;
      if (!this.stopped && this.terminal) this._mode('closed');
    }
  }
}
