import {
  type AgentMessage,
  AsyncActionExecutor,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  asyncTool,
  type ForwardOptions,
  guardrail,
  MemoryStore,
} from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/*
 * Journal keys of parallel steps are taken in program order, before any awaited check: a recovery whose
 * async checks (a tool guardrail asking a moderation service) answer in another order than they did in the
 * crashed run replays each step under its own key. The crash is a call left hanging in a tool or in the
 * model (its process "died": its lease runs out on the store's clock, which the test moves); a fresh agent on the
 * same store recovers the call.
 */

/** A promise to resolve from outside, and a way to wait for a named event. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Checks that answer only when the test says so, per tool name; runs that are counted and announced. */
function harness() {
  const gates = new Map<string, ReturnType<typeof deferred>>();
  const gate = (name: string) => {
    let entry = gates.get(name);
    if (entry === undefined) {
      entry = deferred();
      gates.set(name, entry);
    }
    return entry;
  };
  const runs: string[] = [];
  const ran = new Map<string, ReturnType<typeof deferred>>();
  const announced = (name: string) => {
    let entry = ran.get(name);
    if (entry === undefined) {
      entry = deferred();
      ran.set(name, entry);
    }
    return entry;
  };
  const moderation = guardrail({
    name: 'moderation',
    on: 'tool',
    check: async (_message, context) => {
      await gate(context.toolCall!.name).promise;
      return undefined;
    },
  });
  return { gate, runs, announced, moderation };
}

type Harness = ReturnType<typeof harness>;

/** Send (not retrySafe) and Lookup (retrySafe); `hang` makes a tool's run never end (the process died in it). */
function tools(h: Harness, hang: Set<string>) {
  const make = (name: string, retrySafe: boolean) =>
    asyncTool({
      name,
      parameters: z.object({ to: z.string() }),
      retrySafe,
      run: async ({ to }) => {
        h.runs.push(`${name}:${to}`);
        h.announced(name).resolve();
        if (hang.has(name)) await new Promise(() => {});
        return `${name} ${to} ok`;
      },
    });
  return [make('Send', false), make('Lookup', true)];
}

/** A scripted model that, once asked with the tools' results, never answers when `hang` is set. */
class DyingModel extends AsyncMockLLM {
  asked = 0;
  constructor(readonly hang: boolean) {
    super({
      responses: (messages) =>
        messages.some((m) => m.role === 'tool')
          ? 'done'
          : {
              toolCalls: [
                { name: 'Send', arguments: { to: 'bob' } },
                { name: 'Lookup', arguments: { to: 'bob' } },
              ],
            },
    });
  }
  override generate(...args: Parameters<AsyncMockLLM['generate']>) {
    this.asked++;
    if (this.hang && args[0].some((m) => m.role === 'tool')) return new Promise<never>(() => {});
    return super.generate(...args);
  }
}

/** The model asks for Send and Lookup at once, then answers (or hangs there: the process died). */
function model(hangAfterTools: boolean) {
  return new DyingModel(hangAfterTools);
}

function agentOn(store: MemoryStore, h: Harness, hang: Set<string>, hangAfterTools: boolean) {
  return new AsyncFunctionCallingAgent({
    name: 'mailer',
    llm: model(hangAfterTools),
    actions: tools(h, hang),
    hooks: [h.moderation],
    durable: { store },
  });
}

const TRIALS = 30;

describe('journal keys of parallel tool calls follow program order, not check timing', () => {
  it(`a crash while Send ran, recovered with the checks answering the other way: Send never runs twice (${TRIALS} trials)`, async () => {
    let doubled = 0;
    let failures = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const { store, die } = storeWithClock();
      // The run that dies: Send's check answers first, Send runs and the process dies inside it; Lookup's
      // check never answered.
      const first = harness();
      const dying = agentOn(store, first, new Set(['Send']), true);
      void dying.call('mail bob', { sessionId: 's' });
      first.gate('Send').resolve();
      await first.announced('Send').promise;
      // A fresh process recovers; this time Lookup's check answers first.
      const second = harness();
      const recovering = agentOn(store, second, new Set(), false);
      // The dead process's lease runs out.
      die();
      const recovered = recovering.recover({ sessionId: 's' });
      second.gate('Lookup').resolve();
      await second.announced('Lookup').promise;
      second.gate('Send').resolve();
      try {
        const [reply] = await recovered;
        expect(reply!.content).toBe('done');
      } catch {
        failures++;
      }
      if (second.runs.includes('Send:bob')) doubled++;
    }
    expect({ doubled, failures }).toEqual({ doubled: 0, failures: 0 });
  });

  it(`a crash after both tools ran, recovered with the checks the other way: a replay, no NonDeterminismError (${TRIALS} trials)`, async () => {
    let nonDeterminism = 0;
    let reruns = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const { store, die } = storeWithClock();
      const first = harness();
      const dying = agentOn(store, first, new Set(), true);
      void dying.call('mail bob', { sessionId: 's' });
      first.gate('Send').resolve();
      await first.announced('Send').promise;
      first.gate('Lookup').resolve();
      await first.announced('Lookup').promise;
      // Both results are journaled once the model is asked again (it never answers: the process died).
      await waitFor(() => (dying.agent.llm as DyingModel).asked === 2);
      const second = harness();
      const recovering = agentOn(store, second, new Set(), false);
      // The dead process's lease runs out.
      die();
      const recovered = recovering.recover({ sessionId: 's' });
      second.gate('Lookup').resolve();
      second.gate('Send').resolve();
      try {
        const [reply] = await recovered;
        expect(reply!.content).toBe('done');
      } catch (error) {
        if ((error as Error).name === 'NonDeterminismError') nonDeterminism++;
        else throw error;
      }
      reruns += second.runs.length;
    }
    expect({ nonDeterminism, reruns }).toEqual({ nonDeterminism: 0, reruns: 0 });
  });

  it(`parallel sub-calls whose input checks answer in the other order replay each under its own key (${TRIALS} trials)`, async () => {
    let mixed = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const { store, die } = storeWithClock();
      const order: string[][] = [[], []];
      const gates = [new Map<string, ReturnType<typeof deferred>>(), new Map()];
      const build = (run: number, answer: (name: string) => string) => {
        const slowInput = (name: string) =>
          guardrail({
            name: `check-${name}`,
            on: 'input',
            check: async () => {
              let entry = gates[run]!.get(name);
              if (entry === undefined) {
                entry = deferred();
                gates[run]!.set(name, entry);
              }
              await entry.promise;
              return undefined;
            },
          });
        const expert = (name: string) =>
          new AsyncAgent({
            name,
            hooks: [slowInput(name)],
            llm: new AsyncMockLLM({
              responses: () => {
                order[run]!.push(name);
                return answer(name);
              },
            }),
          });
        class Panel extends AsyncAgent {
          alpha = expert('alpha');
          beta = expert('beta');
          override async forward(messages: AgentMessage[], options: ForwardOptions) {
            const [a, b] = await Promise.all([
              this.alpha.call(messages, { sessionId: options.sessionId }),
              this.beta.call(messages, { sessionId: options.sessionId }),
            ]);
            if (run === 0) await new Promise(() => {}); // the process dies before the panel answers
            return `${a.content} / ${b.content}`;
          }
        }
        return new Panel({ name: 'panel', durable: { store } });
      };
      const gateOf = (run: number, name: string) => {
        let entry = gates[run]!.get(name);
        if (entry === undefined) {
          entry = deferred();
          gates[run]!.set(name, entry);
        }
        return entry;
      };
      const dying = build(0, (name) => `${name} says yes`);
      void dying.call('should we?', { sessionId: 's' });
      gateOf(0, 'beta').resolve();
      await waitFor(() => order[0]!.length === 1);
      gateOf(0, 'alpha').resolve();
      await waitFor(() => order[0]!.length === 2);
      await new Promise((resolve) => setImmediate(resolve));
      const recovering = build(1, (name) => `${name} was asked again`);
      // The dead process's lease runs out.
      die();
      const recovered = recovering.recover({ sessionId: 's' });
      gateOf(1, 'alpha').resolve();
      gateOf(1, 'beta').resolve();
      const [reply] = await recovered;
      if (reply!.content !== 'alpha says yes / beta says yes') mixed++;
      expect(order[1]).toEqual([]);
    }
    expect(mixed).toBe(0);
  });
});

describe("executors called at once by a composite's forward keep their keys", () => {
  it(`async approval checks answering in the other order on recovery: a replay, nothing runs twice (${TRIALS} trials)`, async () => {
    let failures = 0;
    let reruns = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const { store, die } = storeWithClock();
      const build = (run: number, h: Harness) => {
        const executorFor = (name: string) =>
          new AsyncActionExecutor({
            actions: tools(h, new Set()).filter((t) => t.name === name),
            // Asks a policy service, which answers when the test says so (and never asks a person).
            needsApproval: async (call) => {
              await h.gate(call.name).promise;
              return false;
            },
          });
        class Dispatcher extends AsyncAgent {
          send = executorFor('Send');
          lookup = executorFor('Lookup');
          override async forward(_messages: AgentMessage[], options: ForwardOptions) {
            const message = (name: string) => ({
              sender: 'planner',
              content: '',
              formatted: { toolCalls: [{ id: `call_${name}`, name, arguments: { to: 'bob' } }] },
            });
            const results = await Promise.all([
              this.send.call(message('Send'), { sessionId: options.sessionId }),
              this.lookup.call(message('Lookup'), { sessionId: options.sessionId }),
            ]);
            if (run === 0) await new Promise(() => {}); // the process dies after both tools ran
            return results
              .map((r) => String((r.content as { result: { content: string }[] }[])[0]!.result[0]!.content))
              .join(' / ');
          }
        }
        return new Dispatcher({ name: 'dispatcher', durable: { store } });
      };
      const first = harness();
      void build(0, first).call('go', { sessionId: 's' });
      first.gate('Lookup').resolve();
      await first.announced('Lookup').promise;
      first.gate('Send').resolve();
      await first.announced('Send').promise;
      await waitFor(
        () =>
          (store.readJournal('dispatcher', store.listJournals('dispatcher', 's')[0]!)?.entries.length ?? 0) >=
          5,
      );
      const second = harness();
      // The dead process's lease runs out.
      die();
      const recovered = build(1, second).recover({ sessionId: 's' });
      second.gate('Send').resolve();
      second.gate('Lookup').resolve();
      try {
        const [reply] = await recovered;
        expect(reply!.content).toBe('Send bob ok / Lookup bob ok');
      } catch {
        failures++;
      }
      reruns += second.runs.length;
    }
    expect({ failures, reruns }).toEqual({ failures: 0, reruns: 0 });
  });
});

/** Waits (a macrotask at a time) until `condition` holds. */
async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !condition(); i++) await new Promise((resolve) => setImmediate(resolve));
  if (!condition()) throw new Error('the condition never held');
}

/** A store on a clock the test moves: `die()` lets the leases of the process that "died" run out. */
function storeWithClock() {
  let now = Date.now();
  const store = new MemoryStore({ clock: () => now });
  return {
    store,
    die: () => {
      now += 3_600_000;
    },
  };
}
