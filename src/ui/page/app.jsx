import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { followEvents, getInfo, getMemory, getSessions, loadState, resetSession, streamChat } from './api.js';
import { Chat } from './chat.jsx';
import { MemoryView } from './memory.jsx';
import { Tree } from './tree.jsx';

const SESSION_KEY = 'lagent-ui-session';

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

/** The page: a header with the sessions and the state dict, the chat, the agent tree and the memories. */
export function App() {
  const [info, setInfo] = useState(undefined);
  const [sessions, setSessions] = useState([]);
  const [session, setSession] = useState(() => localStorage.getItem(SESSION_KEY) ?? 'session-1');
  const [memory, setMemory] = useState({});
  const [events, setEvents] = useState([]);
  const [pending, setPending] = useState(undefined);
  const [interrupts, setInterrupts] = useState([]);
  const [error, setError] = useState(undefined);
  const seqs = useRef(new Set());
  const upload = useRef(null);

  const refresh = useCallback(async (id) => {
    try {
      const [state, list] = await Promise.all([getMemory(id), getSessions()]);
      setMemory(state ?? {});
      setSessions((old) => merge(list.sessions, old, [id]));
    } catch (e) {
      setError(e.message);
    }
  }, []);

  useEffect(() => {
    getInfo().then(setInfo, (e) => setError(e.message));
    return followEvents(
      (name, event) => {
        if (name !== 'agent' || seqs.current.has(event.seq)) return;
        seqs.current.add(event.seq);
        setEvents((old) => (old.length >= 1000 ? [...old.slice(-999), event] : [...old, event]));
      },
      (e) => setError(e.message),
    );
  }, []);

  useEffect(() => {
    localStorage.setItem(SESSION_KEY, session);
    setInterrupts([]);
    setPending(undefined);
    refresh(session);
  }, [session, refresh]);

  const send = useCallback(
    async (messages, shown) => {
      setError(undefined);
      setInterrupts([]);
      setPending({ user: shown, text: '' });
      try {
        const reply = await streamChat(session, messages, (text) => setPending({ user: shown, text }));
        if (reply?.type === 'interrupt') setInterrupts(reply.formatted?.interrupts ?? []);
      } catch (e) {
        setError(e.message);
      } finally {
        setPending(undefined);
        await refresh(session);
      }
    },
    [session, refresh],
  );

  const decide = useCallback(
    (decisions) => {
      const content = decisions.map((d) => `${d.approve ? 'approve' : 'decline'} ${d.id}`).join('\n');
      send([{ sender: 'user', type: 'resume', content, formatted: { decisions } }], undefined);
    },
    [send],
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
    try {
      await resetSession(session);
    } catch (e) {
      setError(e.message);
    }
    setInterrupts([]);
    await refresh(session);
  }, [session, refresh]);

  const all = merge(sessions, [session]);
  const busy = pending !== undefined;
  return (
    <div class="app">
      <header>
        <h1 data-testid="agent-name">{info?.name ?? 'agent'}</h1>
        <label>
          session{' '}
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
        <button type="button" data-testid="reset" disabled={busy} onClick={reset}>
          Reset
        </button>
        <span class="spacer" />
        <button type="button" data-testid="download" onClick={download}>
          Download state
        </button>
        <button type="button" data-testid="upload" disabled={busy} onClick={() => upload.current?.click()}>
          Upload state
        </button>
        <input ref={upload} type="file" accept="application/json,.json" hidden onChange={onUpload} />
      </header>
      {error && (
        <div class="error" role="alert" data-testid="error">
          {error}
        </div>
      )}
      <main>
        <Chat
          memory={memory.memory ?? []}
          pending={pending}
          interrupts={interrupts}
          busy={busy}
          onSend={(text) => send([text], text)}
          onDecide={decide}
        />
        <aside>
          <Tree info={info} events={events} />
          <MemoryView memory={memory} />
        </aside>
      </main>
    </div>
  );
}
