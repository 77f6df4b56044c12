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

/** Every request of the page to its server (`fetch`, with the secret). */
export function request(path, init = {}) {
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

const session = (id) => encodeURIComponent(id);

export const getInfo = () => request('/ui/info').then(json);
export const getSessions = () => request('/ui/sessions').then(json);
export const getMemory = (id) => request(`/memory/${session(id)}`).then(json);
export const getInterrupts = (id) => request(`/ui/sessions/${session(id)}/interrupts`).then(json);
export const resetSession = (id) =>
  request(`/ui/sessions/${session(id)}/reset`, { method: 'POST' }).then(json);
export const loadState = (id, text) =>
  request(`/ui/state/${session(id)}`, {
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
 * Follows the server's agent events (`/ui/events`) until `signal` aborts, reconnecting after a dropped stream
 * (the server replays its recent events; the page drops those it has by `seq`). It is read with fetch so that
 * it carries the secret. `onState` hears 'open', 'closed' and 'refused' (the server wants the secret).
 */
export async function watchEvents(onEvent, onState, signal) {
  let wait = 500;
  while (!signal.aborted) {
    try {
      const response = await request('/ui/events', { signal });
      if (response.status === 401) {
        // Without the secret no retry helps: say so once.
        onState('refused');
        return;
      }
      if (!response.ok) await json(response);
      onState('open');
      wait = 500;
      await readEvents(response, (event, data) => {
        if (event === 'agent') onEvent(data);
      });
    } catch {
      // Dropped, or refused: try again a little later.
    }
    if (signal.aborted) return;
    onState('closed');
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, 10_000);
  }
}

/** The state a streamed chunk carries (Lagent's `stream_state`): which are tool calls and tool results. */
const TOOL_CALLS = new Set([4, 7]);
const TOOL_RESULTS = new Set([5, 8]);

function toolCallsOf(formatted) {
  const calls = formatted?.toolCalls ?? formatted?.tool_calls;
  return Array.isArray(calls) ? calls : undefined;
}

/**
 * Sends messages to the agent on a session through the streaming endpoint. `onParts` gets what the reply
 * shows so far, as parts: `{ kind: 'text', text }` as the model writes, `{ kind: 'tools', calls, results }` for
 * a round of tool calls (results once they came back). Resolves to the final message (Lagent's JSON shape).
 * Aborting `signal` stops the call (the server takes it back).
 */
export async function streamChat(sessionId, messages, onParts, signal) {
  const response = await request('/chat_completion/stream', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: messages, session_id: sessionId }),
    signal,
  });
  if (!response.ok) await json(response);
  const parts = [];
  const last = () => parts.at(-1);
  let final;
  let failure;
  await readEvents(response, (event, data) => {
    if (event === 'message') final = data;
    else if (event === 'error') failure = new Error(data.detail ?? 'the call failed');
    else if (event === 'delta') {
      if (last()?.kind === 'text') last().text += data.content;
      else parts.push({ kind: 'text', text: data.content });
    } else if (event === 'chunk') {
      const state = data.stream_state ?? data.streamState;
      const calls = toolCallsOf(data.formatted);
      if (TOOL_CALLS.has(state) && calls) parts.push({ kind: 'tools', calls, results: undefined });
      else if (TOOL_RESULTS.has(state)) {
        const round = last()?.kind === 'tools' ? last() : undefined;
        const results = Array.isArray(data.content) ? data.content : [data.content];
        if (round) round.results = results;
        else parts.push({ kind: 'tools', calls: toolCallsOf(data.formatted) ?? [], results });
      } else if (typeof data.content === 'string') {
        // A whole text so far (a new model turn, or a stream that sends no deltas).
        if (last()?.kind === 'text') last().text = data.content;
        else parts.push({ kind: 'text', text: data.content });
      }
    } else return;
    if (event !== 'message' && event !== 'error') onParts(parts.map((part) => ({ ...part })));
  });
  if (failure) throw failure;
  return final;
}
