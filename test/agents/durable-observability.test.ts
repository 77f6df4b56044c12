import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { AsyncFunctionCallingAgent, asyncTool, interruptsOf, MemoryStore, resumeWith } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

function mailer(store: MemoryStore, llm: AsyncMockLLM, runs: string[]) {
  return new AsyncFunctionCallingAgent({
    name: 'mailer',
    llm,
    durable: { store },
    actions: [
      asyncTool({
        name: 'Send',
        parameters: z.object({ to: z.string() }),
        needsApproval: true,
        run: async ({ to }) => {
          runs.push(to);
          return `sent to ${to}`;
        },
      }),
    ],
  });
}

const script = () =>
  new AsyncMockLLM({
    responses: [{ content: '', toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] }, 'Sent.'],
  });

describe('durable calls: events and spans for interrupts, resumes and replayed steps', () => {
  const exporter = new InMemorySpanExporter();
  afterEach(() => {
    trace.disable();
    exporter.reset();
  });

  it('emits interrupt, resume and stepReplayed events', async () => {
    const runs: string[] = [];
    const agent = mailer(new MemoryStore(), script(), runs);
    const seen: string[] = [];
    agent.events.on('interrupt', ({ interrupts }) => seen.push(`interrupt ${interrupts.map((i) => i.id)}`));
    agent.events.on('resume', ({ decisions }) => seen.push(`resume ${decisions.map((d) => d.id)}`));
    agent.events.on('stepReplayed', ({ step, callId }) =>
      seen.push(`replayed ${step.kind} ${step.name} ${step.key} ${typeof callId}`),
    );
    const [ask] = interruptsOf(await agent.call('mail bob', { sessionId: 1 }));
    await agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 1 });
    expect(seen).toEqual([`interrupt ${ask!.id}`, `resume ${ask!.id}`, 'replayed model mailer r.0.0 string']);
    expect(runs).toEqual(['bob']);
  });

  it("marks the agent's span with lagent.interrupt, lagent.resume and lagent.step.replayed events", async () => {
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    const runs: string[] = [];
    const llm = script();
    const agent = mailer(new MemoryStore(), llm, runs);
    const [ask] = interruptsOf(await agent.call('mail bob', { sessionId: 1 }));
    await agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 1 });
    const spans = exporter.getFinishedSpans();
    const outer = spans.filter(
      (span: ReadableSpan) => span.name === 'invoke_agent mailer' && span.parentSpanContext === undefined,
    );
    expect(outer).toHaveLength(2);
    expect(outer.flatMap((span) => span.events.map((event) => event.name))).toEqual([
      'lagent.interrupt',
      'lagent.resume',
    ]);
    // The replayed model step is an event of the span of the call that would have asked the model.
    const replays = spans.flatMap((span) =>
      span.events.filter((event) => event.name === 'lagent.step.replayed').map((event) => ({ span, event })),
    );
    expect(replays).toHaveLength(1);
    expect(replays[0]!.event.attributes).toMatchObject({
      'lagent.step.kind': 'model',
      'lagent.step.name': 'mailer',
    });
    expect(replays[0]!.span.parentSpanContext?.spanId).toBe(outer[1]!.spanContext().spanId);
    // Under tracing the model steps are journaled too: the resumed call did not ask the model again for them.
    expect(llm.calls).toHaveLength(2);
    expect(runs).toEqual(['bob']);
  });
});
