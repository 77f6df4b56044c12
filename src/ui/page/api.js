// The page's requests to its server. Same-origin requests carry the token cookie when the server has one.

/** Reads a JSON answer; throws with the server's `detail` when it is an error. */
async function json(response) {
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

export const getInfo = () => fetch('/ui/info').then(json);
export const getSessions = () => fetch('/ui/sessions').then(json);
export const getMemory = (id) => fetch(`/memory/${encodeURIComponent(id)}`).then(json);
export const resetSession = (id) =>
  fetch(`/ui/sessions/${encodeURIComponent(id)}/reset`, { method: 'POST' }).then(json);
export const loadState = (id, text) =>
  fetch(`/ui/state/${encodeURIComponent(id)}`, {
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
 * Sends messages to the agent on a session through the streaming endpoint: `onText` gets the reply's text so
 * far as it grows; resolves to the final message (Lagent's JSON shape).
 */
export async function streamChat(sessionId, messages, onText) {
  const response = await fetch('/chat_completion/stream', {
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
