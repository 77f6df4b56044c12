import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import {
  getInfo,
  getInterrupts,
  getMemory,
  getSessions,
  loadState,
  NO_SECRET,
  resetSession,
  streamChat,
  watchEvents,
} from './api.js';
import { Chat } from './chat.jsx';
import { MemoryView, WorkingMemoryView } from './memory.jsx';
import { buildTranscript, decisionsOf } from './transcript.js';
import { Tree } from './tree.jsx';

const SESSION_KEY = 'lagent-ui-session';
/** Events the page keeps (of every session; each session's view filters them). */
const MAX_EVENTS = 2000;
/** Root events after which another tab's call may have changed the session. */
const SETTLING = new Set(['callEnd', 'error', 'interrupt']);

/** The session ids of the server and the page, without duplicates, in the order first seen. */
function merge(...lists) {
  const seen = new Map();
  for (const list of lists) for (const id of list) seen.set(String(id), String(id));
  return [...seen.values()];
}

function nextSessionId(sessions) {
  let n = sessions.length + 1;
  while (sessions.includes(`session-${n}`)) n++;
  return `session-${n}`;
}

let failureKeys = 0;

/**
 * The page: a header with the sessions and the state dict, the chat (its transcript, tool calls, approvals),
 * the agent tree with the session's figures and events, and the session's memories. Below 900 px wide the
 * three panels become tabs.
 */
export function App() {
  const [info, setInfo] = useState(undefined);
  const [sessions, setSessions] = useState([]);
  const [session, setSession] = useState(() => localStorage.getItem(SESSION_KEY) ?? 'session-1');
  const [memory, setMemory] = useState({});
  const [events, setEvents] = useState([]);
  const [pending, setPending] = useState(undefined);
  const [interrupts, setInterrupts] = useState([]);
  const [failures, setFailures] = useState({});
  const [error, setError] = useState(undefined);
  const [confirmReset, setConfirmReset] = useState(false);
  const [view, setView] = useState('chat');
  const [connection, setConnection] = useState('connecting');
  const seqs = useRef(new Set());
  const upload = useRef(null);
  const call = useRef(undefined);
  const current = useRef(session);
  current.current = session;

  const refresh = useCallback(async (id) => {
    try {
      const [state, list, waiting] = await Promise.all([getMemory(id), getSessions(), getInterrupts(id)]);
      if (current.current !== id) return;
      setMemory(state ?? {});
      setInterrupts(waiting?.interrupts ?? []);
      setSessions((old) => merge(list.sessions, old, [id]));
    } catch (e) {
      setError(e.message);
    }
  }, []);

  // Another tab's (or a client's) call on this session: show what it changed once it settles.
  const settle = useRef(undefined);
  const onEvent = useCallback(
    (event) => {
      if (seqs.current.has(event.seq)) return;
      seqs.current.add(event.seq);
      setEvents((old) =>
        old.length >= MAX_EVENTS ? [...old.slice(1 - MAX_EVENTS), event] : [...old, event],
      );
      if (event.path === '' && SETTLING.has(event.kind) && String(event.sessionId) === current.current) {
        clearTimeout(settle.current);
        settle.current = setTimeout(() => {
          if (call.current === undefined) refresh(current.current);
        }, 50);
      }
    },
    [refresh],
  );

  useEffect(() => {
    getInfo().then(setInfo, (e) => setError(e.message));
    const stop = new AbortController();
    watchEvents(
      onEvent,
      (state) => {
        setConnection(state);
        if (state === 'refused') setError(NO_SECRET);
      },
      stop.signal,
    );
    return () => stop.abort();
  }, [onEvent]);

  useEffect(() => {
    localStorage.setItem(SESSION_KEY, session);
    setInterrupts([]);
    setPending(undefined);
    setConfirmReset(false);
    refresh(session);
  }, [session, refresh]);

  const fail = useCallback((id, failure) => {
    setFailures((old) => ({ ...old, [id]: [...(old[id] ?? []), { key: ++failureKeys, ...failure }] }));
  }, []);

  const dismiss = useCallback((failure) => {
    setFailures((old) => {
      const next = {};
      for (const [id, list] of Object.entries(old)) next[id] = list.filter((f) => f.key !== failure.key);
      return next;
    });
  }, []);

  /** Sends messages on the session; `shown` is the person's text (undefined for decisions). */
  const send = useCallback(
    async (messages, shown) => {
      const id = session;
      const controller = new AbortController();
      call.current = controller;
      setError(undefined);
      setInterrupts([]);
      setPending({ user: shown, parts: [] });
      try {
        await streamChat(id, messages, (parts) => setPending({ user: shown, parts }), controller.signal);
      } catch (e) {
        fail(id, { text: shown, messages, error: e.message, stopped: controller.signal.aborted });
      } finally {
        call.current = undefined;
        setPending(undefined);
        await refresh(id);
      }
    },
    [session, refresh, fail],
  );

  const stop = useCallback(() => call.current?.abort(), []);

  const decide = useCallback(
    (decisions) => {
      const content = decisions.map((d) => `${d.approve ? 'approve' : 'decline'} ${d.id}`).join('\n');
      send([{ sender: 'user', type: 'resume', content, formatted: { decisions } }], undefined);
    },
    [send],
  );

  const retry = useCallback(
    (failure) => {
      dismiss(failure);
      send(failure.messages, failure.text);
    },
    [send, dismiss],
  );

  const download = useCallback(async () => {
    try {
      const state = await getMemory(session);
      const url = URL.createObjectURL(
        new Blob([JSON.stringify(state, null, 2)], { type: 'application/json' }),
      );
      const link = document.createElement('a');
      link.href = url;
      link.download = `${info?.name ?? 'agent'}-${session}.json`;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    } catch (e) {
      setError(e.message);
    }
  }, [session, info]);

  const onUpload = useCallback(
    async (event) => {
      const file = event.currentTarget.files?.[0];
      event.currentTarget.value = '';
      if (!file) return;
      try {
        await loadState(session, await file.text());
      } catch (e) {
        setError(e.message);
      }
      await refresh(session);
    },
    [session, refresh],
  );

  const reset = useCallback(async () => {
    setConfirmReset(false);
    try {
      await resetSession(session);
    } catch (e) {
      setError(e.message);
    }
    setFailures((old) => ({ ...old, [session]: [] }));
    await refresh(session);
  }, [session, refresh]);

  const all = merge(sessions, [session]);
  const busy = pending !== undefined;
  const own = events.filter((event) => String(event.sessionId) === session);
  const transcriptKey = info?.transcript ?? 'memory';
  const items = buildTranscript(
    memory[transcriptKey] ?? memory.memory ?? [],
    decisionsOf(own),
    new Set(interrupts.map((ask) => ask.toolCall?.id)),
  );
  const name = info?.name ?? 'agent';
  return (
    <div class="app" data-view={view}>
      <header>
        <h1 data-testid="agent-name" title={info ? `${name} (${info.className})` : name}>
          {name}
        </h1>
        <label class="session">
          <span class="label-text">session</span>
          <select
            data-testid="session"
            value={session}
            disabled={busy}
            onChange={(e) => setSession(e.currentTarget.value)}
          >
            {all.map((id) => (
              <option key={id} value={id}>
                {id}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          data-testid="new-session"
          disabled={busy}
          onClick={() => setSession(nextSessionId(all))}
        >
          New
        </button>
        <button type="button" data-testid="reset" disabled={busy} onClick={() => setConfirmReset(true)}>
          Reset
        </button>
        <span class="spacer" />
        <span class={`connection ${connection}`} data-testid="connection" title={`events: ${connection}`} />
        <button
          type="button"
          data-testid="download"
          title="Download the session's state dict"
          onClick={download}
        >
          Download<span class="wide-only"> state</span>
        </button>
        <button
          type="button"
          data-testid="upload"
          title="Load a state dict into the session"
          disabled={busy}
          onClick={() => upload.current?.click()}
        >
          Upload<span class="wide-only"> state</span>
        </button>
        <input ref={upload} type="file" accept="application/json,.json" hidden onChange={onUpload} />
      </header>
      {confirmReset && (
        <div class="confirm" role="alertdialog" data-testid="confirm-reset">
          <span>
            Reset <b>{session}</b>? Every agent's memory of this session is cleared.
          </span>
          <span class="actions">
            <button type="button" class="danger" data-testid="confirm-reset-yes" onClick={reset}>
              Reset
            </button>
            <button type="button" data-testid="confirm-reset-no" onClick={() => setConfirmReset(false)}>
              Cancel
            </button>
          </span>
        </div>
      )}
      {error && (
        <div class="error" role="alert" data-testid="error">
          <span>{error}</span>
          <button type="button" class="link" onClick={() => setError(undefined)}>
            ×
          </button>
        </div>
      )}
      <nav class="tabs" data-testid="tabs">
        {['chat', 'agents', 'memory'].map((tab) => (
          <button
            type="button"
            key={tab}
            class={view === tab ? 'active' : ''}
            data-testid={`tab-${tab}`}
            onClick={() => setView(tab)}
          >
            {tab}
            {tab === 'chat' && interrupts.length > 0 ? ` (${interrupts.length})` : ''}
          </button>
        ))}
      </nav>
      <main>
        <Chat
          items={items}
          pending={pending}
          failures={failures[session] ?? []}
          interrupts={interrupts}
          busy={busy}
          onSend={(text) => send([text], text)}
          onStop={stop}
          onDecide={decide}
          onRetry={retry}
          onDismiss={dismiss}
        />
        <aside>
          <WorkingMemoryView events={own} memory={memory} />
          <Tree info={info} events={own} session={session} />
          <MemoryView memory={memory} />
        </aside>
      </main>
    </div>
  );
}
