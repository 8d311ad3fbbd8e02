// The page's client of the trace service: JSON-RPC 2.0 over `POST /rpc`,
// the session's notifications (progress, partial results, growth) from
// `GET /events` as server-sent events. Every request carries the token
// the page's URL was given.

export class RpcError extends Error {
  constructor(error) {
    super(error.message);
    this.code = error.code;
    this.data = error.data;
  }
}

/** JSON-RPC's code for a cancelled request. */
export const CANCELLED = -32800;

export class Rpc {
  constructor(token) {
    this.token = token;
    // Ids unique to this page, so that two pages never share one.
    const bytes = crypto.getRandomValues(new Uint8Array(6));
    this.prefix = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    this.next = 1;
    this.progress = new Map();
    this.listeners = new Map();
    this.events = null;
  }

  /** Opens the event stream; resolves once it is open. */
  connect() {
    return new Promise((resolve, reject) => {
      const events = new EventSource(`/events?token=${encodeURIComponent(this.token)}`);
      this.events = events;
      events.onopen = () => resolve();
      events.onerror = () => {
        if (events.readyState === EventSource.CLOSED) reject(new Error('the event stream was refused'));
      };
      events.onmessage = (event) => this.dispatch(JSON.parse(event.data));
    });
  }

  dispatch(message) {
    if (message.method === '$/progress') {
      const handler = this.progress.get(message.params.token);
      if (handler) handler(message.params.value);
      return;
    }
    for (const handler of this.listeners.get(message.method) ?? []) handler(message.params);
  }

  /** Calls `handler(params)` on each notification `method`. */
  on(method, handler) {
    if (!this.listeners.has(method)) this.listeners.set(method, []);
    this.listeners.get(method).push(handler);
  }

  /** A fresh progress token whose `$/progress` values go to `handler`. */
  token_for(handler) {
    const token = `${this.prefix}-p${this.next++}`;
    this.progress.set(token, handler);
    return token;
  }

  forget(token) {
    this.progress.delete(token);
  }

  async post(body) {
    const response = await fetch('/rpc', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${this.token}` },
      body: JSON.stringify(body),
    });
    if (response.status === 204) return null;
    if (!response.ok) throw new Error(`${response.status} ${(await response.text()).trim()}`);
    return response.json();
  }

  /** Starts a request: `{id, result}`, `result` a promise of its result. */
  start(method, params) {
    const id = `${this.prefix}-${this.next++}`;
    const result = this.post({ jsonrpc: '2.0', id, method, params }).then((answer) => {
      if (answer.error) throw new RpcError(answer.error);
      return answer.result;
    });
    return { id, result };
  }

  call(method, params) {
    return this.start(method, params).result;
  }

  cancel(id) {
    return this.post({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id } });
  }
}
