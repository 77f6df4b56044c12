import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Agent,
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  GuardrailTripped,
  guardrail,
  interruptsOf,
  MemoryStore,
  resumeWith,
} from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentClient, HTTPAgentServer } from 'lagent-ts/distributed/http';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { replyWith, startFakeHttp } from '../../helpers/http-server';
import { type Child, HERE, startChild } from './processes';

/*
 * Tool guardrails reach a remote agent: the client asks the remote call to stop before every tool call
 * (askBeforeTools), checks each asked call with the local tool guardrails, and resumes the remote call
 * approving them; a trip fails the local call and the remote tool never runs.
 */

const started: HTTPAgentServer[] = [];
const clients: AsyncHTTPAgentClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(started.splice(0).map((server) => server.close()));
});

async function serve(agent: AsyncAgent | AsyncFunctionCallingAgent): Promise<AsyncHTTPAgentClient> {
  const server = new HTTPAgentServer({ agent: agent as AsyncAgent, port: 0, onError: () => undefined });
  await server.listen();
  started.push(server);
  const client = new AsyncHTTPAgentClient({ url: server.url });
  clients.push(client);
  return client;
}

/** A file deleter served over HTTP: its model asks to delete each path it is given, then says done. */
function deleter(paths: string[], deleted: string[], options: { needsApproval?: boolean } = {}) {
  const deleteFile = asyncTool({
    name: 'DeleteFile',
    parameters: z.object({ path: z.string() }),
    needsApproval: options.needsApproval,
    run: async ({ path }) => {
      deleted.push(path);
      return `deleted ${path}`;
    },
  });
  const llm = new AsyncMockLLM({
    responses: [
      {
        content: '',
        toolCalls: paths.map((path, i) => ({ id: `del_${i}`, name: 'DeleteFile', arguments: { path } })),
      },
      'done',
    ],
  });
  return { deleteFile, llm };
}

/** Never delete anything under /home. */
const noHome = (seen: unknown[] = []) =>
  guardrail({
    name: 'no-home',
    on: 'tool',
    check: (message, context) => {
      seen.push(context.toolCall);
      const path = String((message.formatted as { arguments: { path?: unknown } }).arguments.path);
      return path.startsWith('/home') ? `refuses to delete ${path}` : undefined;
    },
  });

/** A local agent that hands its input to the remote one. */
function localWith(remote: AsyncHTTPAgentClient, hooks: ReturnType<typeof guardrail>[]) {
  class Local extends AsyncAgent {
    remote = remote;
    override async forward(messages: AgentMessage[], options: { sessionId: string | number }) {
      const reply = await this.remote.call(messages, { sessionId: options.sessionId });
      return `local: ${String(reply.content)}`;
    }
  }
  return new Local({ name: 'local', hooks });
}

describe('tool guardrails reach remote agents (AsyncHTTPAgentClient)', () => {
  it('a remote DeleteFile the local guardrail blocks does not run: the local call fails with GuardrailTripped', async () => {
    const deleted: string[] = [];
    const { deleteFile, llm } = deleter(['/home/u'], deleted);
    const remote = await serve(new AsyncFunctionCallingAgent({ llm, actions: [deleteFile] }));
    const local = localWith(remote, [noHome()]);
    let error: unknown;
    try {
      await local.call('clean up', { sessionId: 's1' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect((error as GuardrailTripped).reason).toBe('refuses to delete /home/u');
    expect(deleted).toEqual([]);
    expect(local.memory!.get('s1')?.length ?? 0).toBe(0);
  });

  it('calls that pass run, each checked once with its arguments, and the reply comes back', async () => {
    const deleted: string[] = [];
    const seen: unknown[] = [];
    const { deleteFile, llm } = deleter(['/tmp/a', '/tmp/b'], deleted);
    const remote = await serve(new AsyncFunctionCallingAgent({ llm, actions: [deleteFile] }));
    const local = localWith(remote, [noHome(seen)]);
    const reply = await local.call('clean up', { sessionId: 's2' });
    expect(reply.content).toBe('local: done');
    expect(deleted).toEqual(['/tmp/a', '/tmp/b']);
    expect(seen).toEqual([
      { name: 'DeleteFile', arguments: { path: '/tmp/a' } },
      { name: 'DeleteFile', arguments: { path: '/tmp/b' } },
    ]);
    // The remote session holds the whole turn, as without checks.
    const memory = (await remote.stateDict('s2')) as Record<string, { content: unknown }[]>;
    expect(memory['agent.memory']!.at(-1)!.content).toBe('done');
  });

  it('one blocked call of a round: none of the round runs', async () => {
    const deleted: string[] = [];
    const { deleteFile, llm } = deleter(['/tmp/a', '/home/u/notes'], deleted);
    const remote = await serve(new AsyncFunctionCallingAgent({ llm, actions: [deleteFile] }));
    await expect(localWith(remote, [noHome()]).call('clean up')).rejects.toBeInstanceOf(GuardrailTripped);
    expect(deleted).toEqual([]);
  });

  it('stream(): the chunks come through, the checks are answered in between, a trip fails the stream', async () => {
    const deleted: string[] = [];
    const { deleteFile, llm } = deleter(['/tmp/a'], deleted);
    const remote = await serve(
      new AsyncStreamingFunctionCallingAgent({ llm, actions: [deleteFile] }) as never,
    );
    const kinds: string[] = [];
    class Local extends AsyncAgent {
      remote = remote;
      override async forward(messages: AgentMessage[]) {
        let last: AgentMessage | undefined;
        for await (const chunk of this.remote.stream(messages, { sessionId: 'st' })) {
          kinds.push(String(chunk.type ?? 'chunk'));
          last = chunk;
        }
        return `local: ${String(last!.content)}`;
      }
    }
    const reply = await new Local({ hooks: [noHome()] }).call('clean up');
    expect(reply.content).toBe('local: done');
    expect(deleted).toEqual(['/tmp/a']);
    expect(kinds).not.toContain('interrupt');

    const blocked = deleter(['/home/u'], deleted);
    const second = await serve(
      new AsyncStreamingFunctionCallingAgent({ llm: blocked.llm, actions: [blocked.deleteFile] }) as never,
    );
    class Blocked extends AsyncAgent {
      remote = second;
      override async forward(messages: AgentMessage[]) {
        for await (const _ of this.remote.stream(messages)) {
          // drained
        }
        return 'never';
      }
    }
    await expect(new Blocked({ hooks: [noHome()] }).call('clean up')).rejects.toBeInstanceOf(
      GuardrailTripped,
    );
    expect(deleted).toEqual(['/tmp/a']);
  });

  it("a person's approval is asked first, up the local tree; the approved call is then checked with its edited arguments", async () => {
    const deleted: string[] = [];
    const seen: unknown[] = [];
    const { deleteFile, llm } = deleter(['/tmp/big'], deleted, { needsApproval: true });
    const remote = await serve(new AsyncFunctionCallingAgent({ llm, actions: [deleteFile] }));
    const local = localWith(remote, [noHome(seen)]);
    const paused = await local.call('clean up', { sessionId: 'p' });
    const [ask] = interruptsOf(paused);
    expect(ask).toMatchObject({ kind: 'approval', path: 'remote', toolCall: { name: 'DeleteFile' } });
    expect(seen).toEqual([]);
    // The person edits the path into one the guardrail blocks: the check sees what would run.
    await expect(
      local.call(resumeWith([{ id: ask!.id, approve: true, arguments: { path: '/home/u' } }]), {
        sessionId: 'p',
      }),
    ).rejects.toBeInstanceOf(GuardrailTripped);
    expect(seen).toEqual([{ name: 'DeleteFile', arguments: { path: '/home/u' } }]);
    expect(deleted).toEqual([]);
  });

  for (const durable of [false, true]) {
    it(`approved by a person and passing the checks: the call runs once (${durable ? 'durable' : 'not durable'} remote)`, async () => {
      const deleted: string[] = [];
      const seen: unknown[] = [];
      const { deleteFile, llm } = deleter(['/tmp/big'], deleted, { needsApproval: true });
      const remote = await serve(
        new AsyncFunctionCallingAgent({
          llm,
          actions: [deleteFile],
          durable: durable ? { store: new MemoryStore() } : undefined,
        }),
      );
      const local = localWith(remote, [noHome(seen)]);
      const [ask] = interruptsOf(await local.call('clean up', { sessionId: 'q' }));
      const reply = await local.call(
        resumeWith([{ id: ask!.id, approve: true, arguments: { path: '/tmp/small' } }]),
        { sessionId: 'q' },
      );
      expect(reply.content).toBe('local: done');
      expect(deleted).toEqual(['/tmp/small']);
      expect(seen).toEqual([{ name: 'DeleteFile', arguments: { path: '/tmp/small' } }]);
    });
  }

  it('a remote tool call that cannot stop to be checked (a custom forward running a tool) is refused', async () => {
    const deleted: string[] = [];
    const { deleteFile } = deleter([], deleted);
    class Direct extends AsyncAgent {
      tool = deleteFile;
      override async forward() {
        const result = await this.tool.call({ path: '/tmp/x' });
        return String(result.result?.[0]?.content);
      }
    }
    const remote = await serve(new Direct());
    const error = await localWith(remote, [noHome()])
      .call('go')
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect((error as GuardrailTripped).guardrail).toBe('caller-checks');
    expect(deleted).toEqual([]);
    // Without tool guardrails the same remote call runs its tool.
    await localWith(remote, []).call('go');
    expect(deleted).toEqual(['/tmp/x']);
  });

  it('a server that ignores askBeforeTools (another implementation) fails the call: its tool calls were not checked', async () => {
    const lagent = await startFakeHttp(
      replyWith(() => ({
        status: 200,
        json: { content: 'deleted /home/u', sender: 'remote', formatted: null, extra_info: null, type: null },
      })),
    );
    try {
      const remote = new AsyncHTTPAgentClient({ url: lagent.url });
      clients.push(remote);
      const error = await localWith(remote, [noHome()])
        .call('clean up')
        .then(
          () => undefined,
          (caught: unknown) => caught,
        );
      expect(error).toBeInstanceOf(GuardrailTripped);
      expect((error as GuardrailTripped).guardrail).toBe('caller-checks');
      expect(JSON.parse(lagent.requests[0]!.body)).toMatchObject({ ask_before_tools: true });
      // Without tool guardrails, the same server is called as before.
      expect((await localWith(remote, []).call('clean up')).content).toBe('local: deleted /home/u');
      expect(JSON.parse(lagent.requests[1]!.body)).not.toHaveProperty('ask_before_tools');
    } finally {
      await lagent.close();
    }
  });

  it('without tool guardrails the remote call is as before: no pause, one request', async () => {
    const deleted: string[] = [];
    const { deleteFile, llm } = deleter(['/home/u'], deleted);
    const remote = await serve(new AsyncFunctionCallingAgent({ llm, actions: [deleteFile] }));
    const reply = await localWith(remote, []).call('clean up');
    expect(reply.content).toBe('local: done');
    expect(deleted).toEqual(['/home/u']);
  });
});

describe('tool guardrails reach remote agents (HTTPAgentClient, the server in another process)', () => {
  let dir: string;
  const children: Child[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lagent-remote-guards-'));
  });
  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => child.stop()));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function serveFree(kind: string, runs: string): Promise<string> {
    const child = await startChild(
      process.execPath,
      ['--import', 'tsx', `${HERE}fixtures/approval-agent.ts`, '--kind', kind, '--runs', runs],
      /^\{"url"/,
    );
    children.push(child);
    return (JSON.parse(child.line) as { url: string }).url;
  }

  const syncNoHome = guardrail({
    name: 'no-home',
    on: 'tool',
    check: (message) =>
      String((message.formatted as { arguments: { path?: unknown } }).arguments.path).startsWith('/home')
        ? 'refuses /home'
        : undefined,
  });
  const runsOf = (file: string) =>
    existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];

  it('call() and stream(): a blocked remote Delete never runs; calls that pass run once', async () => {
    for (const kind of ['free', 'free-stream']) {
      const runs = join(dir, `runs-${kind}`);
      const url = await serveFree(kind, runs);
      const client = new HTTPAgentClient({ url });
      try {
        class Local extends Agent {
          remote = client;
          override forward(messages: AgentMessage[], options: { sessionId: string | number }) {
            if (kind === 'free') return `local: ${String(this.remote.call(messages, options).content)}`;
            let last: AgentMessage | undefined;
            for (const chunk of this.remote.stream(messages, options)) last = chunk;
            return `local: ${String(last!.content)}`;
          }
        }
        const local = new Local({ hooks: [syncNoHome] });
        expect(() => local.call('/tmp/a,/home/u', { sessionId: 1 })).toThrow(GuardrailTripped);
        expect(runsOf(runs)).toEqual([]);
        expect(local.call('/tmp/a,/tmp/b', { sessionId: 2 }).content).toMatch(/^local: done: /);
        expect(runsOf(runs)).toEqual(['/tmp/a', '/tmp/b']);
      } finally {
        client.close();
      }
    }
  }, 60_000);
});
