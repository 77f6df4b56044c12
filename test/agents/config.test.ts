import {
  AsyncAgent,
  AsyncBaseAction,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncSequential,
  ConfigurationError,
  createAgent,
  type ObjectConfig,
} from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

/** The model of most configs here: the scripted mock, registered by name as a user registers a class. */
const registry = { AsyncMockLLM };

async function configError(config: unknown, options = {}): Promise<ConfigurationError> {
  try {
    await createAgent(config as ObjectConfig, options);
  } catch (error) {
    if (error instanceof ConfigurationError) return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}

describe('createAgent', () => {
  it("builds the issue's agent from plain JSON, loading a tool class from lagent-ts/tools by name", async () => {
    const json = JSON.stringify({
      type: 'AsyncFunctionCallingAgent',
      llm: { type: 'AsyncGPTAPI', model: 'gpt-4o-mini', apiKey: 'unused', baseURL: 'http://127.0.0.1:9/v1' },
      actions: [{ type: 'AsyncArxivSearch' }],
      template: 'You find papers.',
      maxTurn: 3,
    });
    const agent = await createAgent(JSON.parse(json));
    expect(agent).toBeInstanceOf(AsyncFunctionCallingAgent);
    const built = agent as AsyncFunctionCallingAgent;
    expect(built.maxTurn).toBe(3);
    expect(built.agent.llm).toBeInstanceOf(AsyncGPTAPI);
    expect((built.agent.llm as AsyncGPTAPI).model).toBe('gpt-4o-mini');
    expect(built.agent.template).toBe('You find papers.');
    const actions = [...built.executor.actions.values()];
    expect(actions).toHaveLength(1);
    expect(actions[0]).toBeInstanceOf(AsyncBaseAction);
    expect(actions[0]!.constructor.name).toBe('AsyncArxivSearch');
  });

  it('builds a working agent whose classes come from a registry, nested configs included', async () => {
    const agent = await createAgent(
      {
        type: 'AsyncAgent',
        name: 'echo',
        llm: { type: 'AsyncMockLLM', responses: ['hello'] },
        memory: { recentN: 4 },
      },
      { registry },
    );
    expect(agent).toBeInstanceOf(AsyncAgent);
    expect(agent.name).toBe('echo');
    const reply = await (agent as AsyncAgent).call('hi');
    expect(reply.content).toBe('hello');
  });

  it("takes classes themselves, as Lagent's dict(type=Class), and positional args (Sequential's agents)", async () => {
    const member = (name: string, reply: string) => ({
      type: AsyncAgent,
      name,
      llm: { type: AsyncMockLLM, responses: [reply] },
    });
    const agent = await createAgent({
      type: 'AsyncSequential',
      args: [member('a', 'one'), member('b', 'two')],
    });
    expect(agent).toBeInstanceOf(AsyncSequential);
    expect((await (agent as AsyncSequential).call('go')).content).toBe('two');
  });

  it("keeps objects whose type is lower case as data (OpenAI's function tools)", async () => {
    const tool = {
      type: 'function',
      function: { name: 'add', description: 'Adds', parameters: { type: 'object' } },
    };
    const agent = await createAgent(
      { type: 'AsyncAgent', llm: { type: 'AsyncMockLLM', responses: ['x'] }, tools: [tool] },
      { registry },
    );
    expect(agent.tools).toEqual([tool]);
  });

  it('names the place of an unknown type, a bad type and a constructor failure', async () => {
    const unknown = await configError(
      {
        type: 'AsyncAgent',
        llm: { type: 'AsyncMockLLM', responses: [] },
        actions: [{ type: 'NoAction' }, { type: 'Foo' }],
      },
      { registry },
    );
    expect(unknown.message).toMatch(
      /^actions\[1\]\.type: unknown type "Foo" \(not a class of lagent-ts or lagent-ts\/tools\)/,
    );
    expect((await configError({ type: 'AsyncAgent', llm: { type: 'AsyncGptApi' } })).message).toBe(
      'llm.type: unknown type "AsyncGptApi" (not a class of lagent-ts or lagent-ts/tools); did you mean "AsyncGPTAPI"?',
    );
    expect(
      (await configError({ type: 'AsyncAgent', llm: { type: 'AsyncMockLLM', args: 'x' } }, { registry }))
        .message,
    ).toMatch(/^llm\.args: expected array/);
    expect((await configError({ type: 'AsyncAgent', memory: 5 })).message).toBe(
      'AsyncAgent: memory must be { recentN?, maxSessions? }, a () => Memory factory, or null',
    );
    expect(
      (await configError({ type: 'AsyncSequential', args: [{ type: 'AsyncAgent', memory: 'x' }] })).message,
    ).toMatch(/^args\[0\]: AsyncAgent: memory must be/);
    expect((await configError({ type: 'AsyncArxivSearch' }, { loadTools: false })).message).toMatch(
      /^type: unknown type "AsyncArxivSearch" \(not a class of lagent-ts \(loadTools is off\)\)/,
    );
  });

  it('refuses a config that is not an agent, and closes what it made before failing', async () => {
    expect((await configError({ type: 'AsyncGPTAPI', model: 'm', apiKey: 'k' })).message).toBe(
      'type: "AsyncGPTAPI" is not an agent class',
    );
    expect((await configError([{ type: 'AsyncAgent' }])).message).toMatch(
      /^createAgent expects an agent config/,
    );
    const closed: string[] = [];
    class Closable {
      readonly name: string;
      constructor(options: { name: string }) {
        this.name = options.name;
      }
      close() {
        closed.push(this.name);
      }
    }
    await configError(
      {
        type: 'AsyncAgent',
        llm: { type: 'Closable', name: 'first' },
        hooks: [{ type: 'Closable', name: 'second' }, { type: 'Nope' }],
      },
      { registry: { Closable }, loadTools: false },
    );
    expect(closed).toEqual(['second', 'first']);
  });
});
