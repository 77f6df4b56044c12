import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, startCli } from '../cli/helpers';

/**
 * The deep-research example as `lagent ui`'s showcase: the real `lagent ui` process serving
 * `examples/deep-research/agent.ts` (mock model, local research web) draws its tree, answers a question with
 * a cited, streamed reply, and relays every sub-agent's events to the page.
 */

const AGENT = fileURLToPath(new URL('../../examples/deep-research/agent.ts', import.meta.url));

describe('lagent ui serving the deep-research agent', () => {
  let cli: RunningCli;
  let base: string;
  let auth: { authorization: string };

  beforeAll(async () => {
    cli = await startCli(['ui', '--agent', AGENT, '--port', '0'], /^lagent ui: .* at http/);
    const pageUrl = /(http:\/\/\S+)/.exec(cli.line)![1]!;
    base = new URL(pageUrl).origin;
    auth = { authorization: `Bearer ${decodeURIComponent(pageUrl.split('#token=')[1]!)}` };
  }, 30_000);

  afterAll(async () => {
    if (cli) expect(await cli.stop('SIGTERM')).toBe(0);
  });

  it('draws the planner, the searchers and the writer; streams a cited answer; relays their events', async () => {
    const info = (await (await fetch(`${base}/ui/info`, { headers: auth })).json()) as {
      tree: { path: string }[];
    };
    const paths = info.tree.map((node) => node.path);
    expect(paths).toEqual(expect.arrayContaining(['', 'planner', 'searcher', 'writer']));

    const response = await fetch(`${base}/chat_completion/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ message: ['How did GDP change?'], session_id: 'showcase' }),
    });
    const text = await response.text();
    const deltas = text.split('\n').filter((line) => line.startsWith('event: delta')).length;
    expect(deltas).toBeGreaterThan(2);
    const finalLine = text.split('\n\n').find((block) => block.startsWith('event: message'))!;
    const final = JSON.parse(finalLine.split('\ndata: ')[1]!) as { content: string };
    expect(final.content).toMatch(/\[1\]/);
    expect(final.content).toMatch(/Sources:/);

    // The page's event stream starts with the events kept so far: every agent of the tree took part.
    const controller = new AbortController();
    const events = await fetch(`${base}/ui/events`, { signal: controller.signal, headers: auth });
    const reader = events.body!.getReader();
    let received = '';
    while (!/"path":"writer"/.test(received)) {
      const { value, done } = await reader.read();
      if (done) break;
      received += new TextDecoder().decode(value);
    }
    controller.abort();
    for (const path of ['planner', 'searcher', 'writer']) expect(received).toContain(`"path":"${path}"`);
    expect(received).toMatch(/"kind":"toolStart"/);
  }, 30_000);
});
