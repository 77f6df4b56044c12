import { AsyncAgent, type ChatMessage, TokenWindowAggregator } from 'lagent-ts';
import { HTTPAgentServer, type HTTPAgentServerOptions } from 'lagent-ts/distributed';
import { MemoryVectorStore } from 'lagent-ts/retrieval';
import { AsyncMockLLM, HashEmbedder } from 'lagent-ts/testing';
import { afterEach, expect, it } from 'vitest';

/*
 * The server's `resourceId` option: whose memory a request's call reads is what the application verified (here
 * a user token in a header), on every route that starts a call, and never what a request body says. The agent
 * recalls with `scope: 'resource'`, so a call sees the earlier messages of every session of its resource.
 */

const DIMS = 128;
const ALICE_FACT = 'My locker code at the harbour gym is 4719.';
const BOB_FACT = 'My locker code at the harbour gym is 8823.';
const QUESTION = 'What is my locker code at the harbour gym?';
const CHAT = [
  'The weather was lovely on the walk along the river today',
  'I watched a film about penguins and glaciers last night',
  'We are painting the kitchen a pale shade of green this weekend',
];
/** The application's own check of who calls: a token it issued, in a header. */
const USERS: Record<string, string> = { 'token-alice': 'alice', 'token-bob': 'bob' };

const servers: HTTPAgentServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(options: Partial<HTTPAgentServerOptions> = {}) {
  const prompts: ChatMessage[][] = [];
  const agent = new AsyncAgent({
    name: 'assistant',
    llm: new AsyncMockLLM({
      responses: (messages) => {
        prompts.push(messages);
        return 'Noted.';
      },
    }),
    aggregator: new TokenWindowAggregator({
      maxTokens: 1_000,
      recall: {
        embedder: new HashEmbedder({ dimensions: DIMS }),
        store: new MemoryVectorStore({ dimensions: DIMS, fields: { session: 'string', position: 'number' } }),
        topK: 6,
        scope: 'resource',
      },
    }),
  });
  const server = new HTTPAgentServer({ agent, port: 0, onError: () => {}, ...options });
  servers.push(server);
  const url = await server.listen();
  const post = (path: string, body: unknown, user?: string, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(user ? { 'x-user-token': user } : {}), ...headers },
      body: JSON.stringify(body),
    });
  const say = async (user: string | undefined, sessionId: string, message: string, extra = {}) => {
    const response = await post('/chat_completion', { message, session_id: sessionId, ...extra }, user);
    return response;
  };
  return { agent, prompts, url, post, say };
}

const verified = (request: { headers: Record<string, unknown> }) => {
  const token = request.headers['x-user-token'];
  return typeof token === 'string' ? USERS[token] : undefined;
};

const shows = (prompt: ChatMessage[] | undefined, text: string) =>
  prompt?.some((message) => String(message.content).includes(text)) ?? false;

it('two users, each through the server, recall only their own memory, on every route that starts a call', async () => {
  const { prompts, post, say } = await serve({ resourceId: verified });
  for (const text of [ALICE_FACT, ...CHAT]) expect((await say('token-alice', 'a1', text)).status).toBe(200);
  for (const text of [BOB_FACT, ...CHAT]) expect((await say('token-bob', 'b1', text)).status).toBe(200);

  // A new session of each: the fact comes back from the user's other session, never the other user's.
  expect((await say('token-alice', 'a2', QUESTION)).status).toBe(200);
  expect(shows(prompts.at(-1), '4719')).toBe(true);
  expect(shows(prompts.at(-1), '8823')).toBe(false);
  expect((await say('token-bob', 'b2', QUESTION)).status).toBe(200);
  expect(shows(prompts.at(-1), '8823')).toBe(true);
  expect(shows(prompts.at(-1), '4719')).toBe(false);

  // A body naming another user's resource is ignored (and said so): bob still reads his own memory.
  const claimed = await say('token-bob', 'b3', QUESTION, { resource_id: 'alice' });
  expect(claimed.status).toBe(200);
  expect(claimed.headers.get('lagent-ignored-options')).toContain('resource_id');
  expect(shows(prompts.at(-1), '8823')).toBe(true);
  expect(shows(prompts.at(-1), '4719')).toBe(false);

  // The stream route.
  const streamed = await post(
    '/chat_completion/stream',
    { message: QUESTION, session_id: 'a4' },
    'token-alice',
  );
  expect(streamed.status).toBe(200);
  await streamed.text();
  expect(shows(prompts.at(-1), '4719')).toBe(true);
  expect(shows(prompts.at(-1), '8823')).toBe(false);

  // A protocol route (OpenAI's chat completions; the AI SDK's and AG-UI's read options the same way).
  const openai = await post(
    '/v1/chat/completions',
    { model: 'assistant', messages: [{ role: 'user', content: QUESTION }] },
    'token-bob',
    { 'x-session-id': 'b5' },
  );
  expect(openai.status).toBe(200);
  expect(shows(prompts.at(-1), '8823')).toBe(true);
  expect(shows(prompts.at(-1), '4719')).toBe(false);

  // A run.
  const started = await post('/runs', { message: QUESTION, session_id: 'a6' }, 'token-alice');
  expect(started.status).toBe(202);
  const { runId } = (await started.json()) as { runId: string };
  const log = await fetch(`${servers[0]!.url}/runs/${runId}/stream`);
  expect(await log.text()).toContain('Noted.');
  expect(shows(prompts.at(-1), '4719')).toBe(true);
  expect(shows(prompts.at(-1), '8823')).toBe(false);

  // A2A (its executor runs the task's call from the SDK's call context).
  const a2a = await post(
    '/a2a',
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: 'm1',
          role: 'user',
          contextId: 'b7',
          parts: [{ kind: 'text', text: QUESTION }],
          metadata: { resourceId: 'alice' },
        },
      },
    },
    'token-bob',
  );
  expect(((await a2a.json()) as { result: { status: { state: string } } }).result.status.state).toBe(
    'completed',
  );
  expect(shows(prompts.at(-1), '8823')).toBe(true);
  expect(shows(prompts.at(-1), '4719')).toBe(false);

  // Who the application does not recognise gets no resource: a resource-scope agent refuses the call.
  const stranger = await say('token-mallory', 'm1', QUESTION, { resourceId: 'alice' });
  expect(stranger.status).toBe(400);
  expect(((await stranger.json()) as { detail: string }).detail).toMatch(/resourceId/);
});

it('without the option, a body resourceId is ignored: a resource-scope agent refuses the call', async () => {
  const { prompts, say } = await serve();
  const response = await say(undefined, 's1', ALICE_FACT, { resourceId: 'alice' });
  expect(response.status).toBe(400);
  expect(((await response.json()) as { detail: string }).detail).toMatch(/resourceId call option/);
  expect(prompts).toEqual([]);
});

it('a resourceId function that throws answers 401; a wrong option is refused at construction', async () => {
  const errors: unknown[] = [];
  const { prompts, say } = await serve({
    resourceId: () => {
      throw new Error('bad signature');
    },
    onError: (error) => errors.push(error),
  });
  const response = await say('token-alice', 's1', QUESTION);
  expect(response.status).toBe(401);
  expect(prompts).toEqual([]);
  const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['x'] }) });
  expect(() => new HTTPAgentServer({ agent, resourceId: 'alice' as never })).toThrow(
    /resourceId must be a function/,
  );
  // Callers may never be allowed to set it themselves.
  expect(() => new HTTPAgentServer({ agent, callerOptions: { passThrough: ['resourceId'] } })).toThrow(
    /resourceId/,
  );
});
