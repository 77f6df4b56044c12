/**
 * Which servers run on this thread. A sync component (`GPTAPI`, ...) blocks its thread while it waits, so a
 * server on that same thread can never answer it; knowing the server's port turns a bare timeout into an
 * error that says why. The registry lives on `globalThis` (one per thread) under a registered symbol, so every
 * copy of lagent-ts loaded in the thread (sources, ESM and CJS builds) shares it.
 */

const REGISTRY = Symbol.for('lagent-ts.sameThreadServers');

function registry(): Map<number, string> {
  const holder = globalThis as { [REGISTRY]?: Map<number, string> };
  holder[REGISTRY] ??= new Map();
  return holder[REGISTRY];
}

/**
 * Records that a server listens on 127.0.0.1:`port` on this thread; `description` names it in messages
 * (e.g. `'startFakeOpenAI()'`). Returns the function that forgets it (call it when the server closes).
 */
export function registerSameThreadServer(port: number, description: string): () => void {
  registry().set(port, description);
  return () => {
    if (registry().get(port) === description) registry().delete(port);
  };
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\]|::1|0\.0\.0\.0|\[::\])$/i;

/**
 * Why a sync `client` timing out against `url` may have been blocked by its own thread, and what to do about
 * it; undefined when the server is not on this machine. Precise when the server registered itself here (the
 * fake OpenAI server does), a possibility to check for other loopback servers.
 */
export function sameThreadServerHint(url: string, client: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (!LOOPBACK.test(parsed.hostname)) return undefined;
  const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
  const avoid = `start the server on another thread (startFakeOpenAIWorker() from 'lagent-ts/testing') or in a separate process, or use the Async* client on this thread`;
  const server = registry().get(port);
  if (server !== undefined) {
    return `The server at ${parsed.origin} (${server}) runs on this same thread, which ${client} blocks while it waits, so the server could not answer: ${avoid}`;
  }
  return `If the server at ${parsed.origin} runs on this same thread, it cannot answer while ${client} blocks the thread: ${avoid}`;
}
