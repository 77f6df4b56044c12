import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  Agent,
  AgentList,
  type AgentMessage,
  AsyncAgent,
  type AsyncForwardOptions,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  asyncTool,
  type ForwardOptions,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM, startFakeOpenAI } from 'lagent-ts/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { asyncAdd } from '../helpers/tools';

class Panel extends Agent {
  writer = new Agent({ llm: new MockLLM({ responses: () => 'draft' }), name: 'writer' });
  experts = new AgentList([
    new Agent({ llm: new MockLLM({ responses: () => 'expert view' }), name: 'expert' }),
    new Agent({ llm: new MockLLM({ responses: () => 'second view' }), name: 'expert2' }),
  ]);
  readonly #outsider: Agent; // a private field: not part of the agent tree

  constructor(outsider: Agent) {
    super({ name: 'panel' });
    this.#outsider = outsider;
  }

  override forward([message]: AgentMessage[], { sessionId }: ForwardOptions): AgentMessage {
    const draft = this.writer.call(message!, { sessionId });
    for (const expert of this.experts) expert.call(draft, { sessionId });
    this.#outsider.call(draft, { sessionId });
    return draft;
  }
}

describe("an agent's events include its descendants'", () => {
  it('with their paths in its tree; agents outside the tree are not reported', () => {
    const outsider = new Agent({ llm: new MockLLM({ responses: () => 'other' }), name: 'outsider' });
    const panel = new Panel(outsider);
    const seen: string[] = [];
    panel.events.on('callStart', ({ path, agent }) => seen.push(`start ${path || '(self)'} ${agent.name}`));
    panel.events.on('llmEnd', ({ path, response }) => seen.push(`llm ${path} ${response}`));
    panel.events.on('callEnd', ({ path }) => seen.push(`end ${path || '(self)'}`));
    panel.call('topic', { sessionId: 3 });
    expect(seen).toEqual([
      'start (self) panel',
      'start writer writer',
      'llm writer draft',
      'end writer',
      'start experts.0 expert',
      'llm experts.0 expert view',
      'end experts.0',
      'start experts.1 expert2',
      'llm experts.1 second view',
      'end experts.1',
      'end (self)',
    ]);
  });

  it('wherever the descendant is called from', () => {
    const panel = new Panel(new Agent({ llm: new MockLLM({ responses: () => 'x' }) }));
    const seen: string[] = [];
    panel.events.on('callEnd', ({ path, message }) => seen.push(`${path}: ${message.content}`));
    panel.experts.get(1)!.call('directly, not through the panel');
    expect(seen).toEqual(['experts.1: second view']);
  });

  it('each level sees the paths from itself, and errors too', async () => {
    class Inner extends AsyncAgent {
      leaf = new AsyncAgent({
        llm: new AsyncMockLLM({
          responses: () => {
            throw new Error('model down');
          },
        }),
        name: 'leaf',
      });
      override forward(messages: AgentMessage[], options: AsyncForwardOptions) {
        return this.leaf.call(messages, options);
      }
    }
    class Outer extends AsyncAgent {
      inner = new Inner({ name: 'inner' });
      override forward(messages: AgentMessage[], options: AsyncForwardOptions) {
        return this.inner.call(messages, options);
      }
    }
    const outer = new Outer({ name: 'outer' });
    const outerErrors: string[] = [];
    const innerErrors: string[] = [];
    outer.events.on('error', ({ path }) => outerErrors.push(path));
    outer.inner.events.on('error', ({ path }) => innerErrors.push(path));
    await expect(outer.call('go')).rejects.toThrow('model down');
    expect(outerErrors).toEqual(['inner.leaf', 'inner', '']);
    expect(innerErrors).toEqual(['leaf', '']);
  });
});

describe('OpenTelemetry spans (GenAI conventions)', () => {
  const exporter = new InMemorySpanExporter();
  beforeEach(() => {
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
  });
  afterEach(() => {
    trace.disable();
    exporter.reset();
  });

  const byName = (spans: ReadableSpan[], name: string) => spans.find((span) => span.name === name)!;
  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

  it('nest invoke_agent, chat and execute_tool spans as the calls nest', async () => {
    const server = await startFakeOpenAI({
      script: [{ toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }, 'It is 5.'],
    });
    try {
      const llm = new AsyncGPTAPI({ model: 'gpt-test', baseURL: server.baseURL, apiKey: 'k' });
      class Team extends AsyncAgent {
        solver = new AsyncFunctionCallingAgent({ llm, actions: [asyncAdd], name: 'solver' });
        override forward(messages: AgentMessage[], options: AsyncForwardOptions) {
          return this.solver.call(messages, options);
        }
      }
      const reply = await new Team({ name: 'team' }).call('2 + 3?', { sessionId: 'abc' });
      expect(reply.content).toBe('It is 5.');
      const spans = exporter.getFinishedSpans();
      const team = byName(spans, 'invoke_agent team');
      // The function-calling agent's own model agent carries its name too: the outer one is the team's child.
      const solver = spans.find(
        (span) => span.name === 'invoke_agent solver' && parentOf(span) === team.spanContext().spanId,
      )!;
      expect(team.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'team',
        'gen_ai.conversation.id': 'abc',
      });
      expect(parentOf(team)).toBeUndefined();
      expect(solver).toBeDefined();
      const chats = spans.filter((span) => span.name === 'chat gpt-test');
      expect(chats).toHaveLength(2);
      const innerAgents = spans.filter(
        (span) => span.name.startsWith('invoke_agent') && ![team, solver].includes(span),
      );
      for (const chat of chats) {
        expect(chat.kind).toBe(2); // CLIENT
        expect(chat.attributes['gen_ai.request.model']).toBe('gpt-test');
        expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
        expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
        expect(innerAgents.map((span) => span.spanContext().spanId)).toContain(parentOf(chat));
      }
      const tool = byName(spans, 'execute_tool add');
      expect(tool.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'add',
      });
      expect([solver, ...innerAgents].map((span) => span.spanContext().spanId)).toContain(parentOf(tool));
      expect(tool.status.code).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('mark failed calls and failed tools as errors', async () => {
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: () => {
          throw new Error('model down');
        },
      }),
      name: 'fragile',
    });
    await expect(agent.call('hi')).rejects.toThrow('model down');
    const broken = asyncTool({
      name: 'broken',
      description: 'fails',
      parameters: z.object({}),
      run: () => {
        throw new Error('tool down');
      },
    });
    await broken.call({});
    const spans = exporter.getFinishedSpans();
    const call = byName(spans, 'invoke_agent fragile');
    expect(call.status).toMatchObject({ code: 2, message: 'model down' });
    expect(byName(spans, 'chat').status.code).toBe(2);
    expect(byName(spans, 'execute_tool broken').status).toMatchObject({ code: 2 });
  });

  it('are not made without a registered provider', async () => {
    trace.disable();
    await new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['ok'] }) }).call('hi');
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });
});
