import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AsyncAgent, MemoryStore } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { UIServer } from '#src/ui/index';

/** The page's reset and upload on an agent that keeps its sessions in a store: the store gets the change. */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function agent() {
  return new AsyncAgent({
    name: 'echo',
    llm: new AsyncMockLLM({ responses: (messages) => `echo: ${String(messages.at(-1)?.content)}` }),
  });
}

describe('lagent ui with a store', () => {
  beforeAll(() => {
    if (!existsSync(`${ROOT}dist/ui/app.js`)) {
      execFileSync(process.execPath, [`${ROOT}scripts/build-ui.mjs`], { cwd: ROOT, stdio: 'pipe' });
    }
  });

  it('a reset and a loaded state dict are committed: the memory shows them, and so does a new server', async () => {
    const store = new MemoryStore();
    const server = new UIServer({ agent: agent(), store });
    const url = await server.listen();
    const auth = { authorization: `Bearer ${server.token}` };
    const json = { 'content-type': 'application/json', ...auth };
    const say = (text: string) =>
      fetch(`${url}/chat_completion`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ message: [text], session_id: 'a' }),
      }).then((response) => response.status);
    const memoryOf = async (base: string) =>
      (
        (await (await fetch(`${base}/memory/a`, { headers: auth })).json()) as {
          memory: { content: string }[];
        }
      ).memory.map((m) => m.content);
    try {
      expect([await say('one'), await say('two')]).toEqual([200, 200]);
      expect(await memoryOf(url)).toEqual(['one', 'echo: one', 'two', 'echo: two']);
      expect((await fetch(`${url}/ui/sessions/a/reset`, { method: 'POST', headers: auth })).status).toBe(200);
      expect(await memoryOf(url)).toEqual([]);
      const loaded = await fetch(`${url}/ui/state/a`, {
        method: 'PUT',
        headers: json,
        body: JSON.stringify({ memory: [{ content: 'loaded', sender: 'user' }] }),
      });
      expect(loaded.status).toBe(200);
      expect(await memoryOf(url)).toEqual(['loaded']);
      expect(await say('three')).toBe(200);
      const after = await memoryOf(url);
      expect(after.slice(0, 2)).toEqual(['loaded', 'three']);
      expect(after).toHaveLength(3);
      // A bad state dict is refused and changes nothing.
      const bad = await fetch(`${url}/ui/state/a`, {
        method: 'PUT',
        headers: json,
        body: JSON.stringify({ memory: 'not a list' }),
      });
      expect(bad.status).toBe(400);
      expect(await memoryOf(url)).toEqual(after);
    } finally {
      await server.close();
    }
    const again = new UIServer({ agent: agent(), store, token: server.token });
    const url2 = await again.listen();
    try {
      expect((await memoryOf(url2)).slice(0, 2)).toEqual(['loaded', 'three']);
    } finally {
      await again.close();
    }
  });
});
