import { ConfigurationError } from 'lagent-ts';
import { HTTPAgentServer } from 'lagent-ts/distributed';
import { afterEach, expect, it, vi } from 'vitest';
import { assistant, closeServers, serve } from './fixtures';

// AG-UI's encoder and the A2A SDK are optional peers: without them, a server serving every protocol by default
// answers their routes 501 saying what to install, and one asked for them by name does not start.
vi.mock('@ag-ui/encoder', () => {
  throw new Error("Cannot find package '@ag-ui/encoder'");
});
vi.mock('@a2a-js/sdk/server', () => {
  throw new Error("Cannot find package '@a2a-js/sdk'");
});

afterEach(closeServers);

it('by default, the routes of a protocol whose peer is missing answer 501 with the install command', async () => {
  const { agent } = assistant();
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  process.on('warning', onWarning);
  try {
    const { url } = await serve({ agent });
    const agui = await fetch(`${url}/ag-ui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(agui.status).toBe(501);
    expect(((await agui.json()) as { detail: string }).detail).toMatch(
      /install @ag-ui\/core and @ag-ui\/encoder to use the AG-UI route \(npm install @ag-ui\/core @ag-ui\/encoder\)/,
    );
    const card = await fetch(`${url}/.well-known/agent-card.json`);
    expect(card.status).toBe(501);
    expect(((await card.json()) as { detail: string }).detail).toMatch(/install @a2a-js\/sdk/);
    // The other protocols are served.
    expect((await fetch(`${url}/v1/models`)).status).toBe(200);
    await vi.waitFor(() => expect(warnings.join('\n')).toMatch(/does not serve ag-ui/));
  } finally {
    process.off('warning', onWarning);
  }
});

it('asked for by name, a protocol whose peer is missing fails listen() with the install command', async () => {
  const { agent } = assistant();
  const server = new HTTPAgentServer({ agent, port: 0, protocols: ['openai', 'ag-ui'] });
  const error = await server.listen().catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(ConfigurationError);
  expect((error as Error).message).toMatch(/install @ag-ui\/core and @ag-ui\/encoder/);
  await server.close();
});
