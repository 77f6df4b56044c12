// The page's requests to its server, each with the server's secret as an `Authorization` header.
//
// The secret comes in the address's fragment (`/#token=...`), which a browser never sends to a server. The page
// keeps it in this tab's sessionStorage, which no other origin (no other local port) can read, and takes it out
// of the address bar and history. No cookie: a browser sends a cookie of 127.0.0.1 to every port of the machine.

const SECRET_KEY = 'lagent-ui-secret';

/** What the page says when the server wants the secret it does not have. */
export const NO_SECRET =
  'This page needs its secret: open the address `lagent ui` printed (it ends with #token=...).';

/** Moves the secret from the address (`#token=`, or an older `?token=`) into this tab's storage. */
export function takeSecret() {
  const fromFragment = new URLSearchParams(location.hash.slice(1)).get('token');
  const fromQuery = new URLSearchParams(location.search).get('token');
  const given = fromFragment ?? fromQuery;
  if (given) sessionStorage.setItem(SECRET_KEY, given);
  if (fromFragment !== null || fromQuery !== null) history.replaceState(null, '', '/');
}

/** `fetch` of this server, with the secret. */
function request(path, init = {}) {
  const secret = sessionStorage.getItem(SECRET_KEY);
  const headers = { ...init.headers };
  if (secret) headers.authorization = `Bearer ${secret}`;
  return fetch(path, { ...init, headers });
}

/** Reads a JSON answer; throws with the server's `detail` when it is an error. */
async function json(response) {
  if (response.status === 401) throw new Error(NO_SECRET);
  const text = await response.text();
  let body;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = text;
  }
  if (!response.ok) throw new Error(body?.detail ?? `${response.status} ${response.statusText}`);
  return body;
}

export const getInfo = () => request('/ui/info').then(json);
export const getSessions = () => request('/ui/sessions').then(json);
export const getMemory = (id) => request(`/memory/${encodeURIComponent(id)}`).then(json);
export const resetSession = (id) =>
  request(`/ui/sessions/${encodeURIComponent(id)}/reset`, { method: 'POST' }).then(json);
export const loadState = (id, text) =>
  request(`/ui/state/${encodeURIComponent(id)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: text,
  }).then(json);

/** Splits a server-sent-event stream into `{ event, data }` records, calling `onEvent` with each. */
export async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const record = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data = [];
      for (const line of record.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length > 0) onEvent(event, JSON.parse(data.join('\n')));
      end = buffer.indexOf('\n\n');
    }
  }
}

/**
 * Follows the agent tree's event stream (`/ui/events`, read with fetch so that it carries the secret), calling
 * `onEvent(name, data)` with each event; reconnects a second after the stream ends or fails, as EventSource would.
 * Returns a function that stops it.
 */
export function followEvents(onEvent, onRefused) {
  let stopped = false;
  let controller;
  (async () => {
    while (!stopped) {
      controller = new AbortController();
      try {
        const response = await request('/ui/events', { signal: controller.signal });
        if (response.status === 401) {
          onRefused?.(new Error(NO_SECRET));
          return;
        }
        if (response.ok) await readEvents(response, onEvent);
      } catch {
        // a dropped stream: reconnect below
      }
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  return () => {
    stopped = true;
    controller?.abort();
  };
}

/**
 * Sends messages to the agent on a session through the streaming endpoint: `onText` gets the reply's text so
 * far as it grows; resolves to the final message (Lagent's JSON shape).
 */
export async function streamChat(sessionId, messages, onText) {
  const response = await request('/chat_completion/stream', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: messages, session_id: sessionId }),
  });
  if (!response.ok) await json(response);
  let text = '';
  let final;
  let failure;
  await readEvents(response, (event, data) => {
    if (event === 'chunk')
      text = typeof data.content === 'string' ? data.content : JSON.stringify(data.content);
    else if (event === 'delta') text += data.content;
    else if (event === 'message') final = data;
    else if (event === 'error') failure = new Error(data.detail ?? 'the call failed');
    if (event === 'chunk' || event === 'delta') onText(text);
  });
  if (failure) throw failure;
  return final;
}
