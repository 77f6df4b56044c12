import { existsSync } from 'node:fs';
import { z } from 'zod';
import {
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  asyncTool,
  type DurableOptions,
  interruptsOf,
  MemoryStore,
  resumeWith,
} from '../src/index';
import { AsyncMockLLM } from '../src/testing/index';
import { median } from './competitors/processes';
import type { Suite } from './report';

/**
 * Durable calls and tool approval, in one process, against a zero-latency scripted model:
 *
 * - journaling: the same function-calling turn (model asks for `Weather`, the tool runs, the model answers:
 *   three steps) with `durable: { store: MemoryStore }` and without; the difference per step;
 * - a paused turn: the same turn with `needsApproval: true` on the tool, so it pauses at the call, and a
 *   `resumeWith` approval runs the tool and the last model turn; compared with the turn that does not pause;
 * - the plain `AsyncAgent.call` (durable off) of `bench/core.ts` in the same run;
 * - side by side, the paused-and-resumed turn in OpenAI Agents JS (`needsApproval`, `RunState` serialized to
 *   a string and back) and LangGraph.js (`interrupt()` in the tool, `MemorySaver`, `Command({ resume })`),
 *   loaded only after lagent-ts's figures are taken (OpenAI Agents JS turns on promise hooks process-wide).
 *
 * Every figure is the median over rounds of a few ms each, after a time-based warm-up; the variants being
 * compared take turns round by round, so a busy machine weighs on both alike.
 */

const WARM_UP_MS = 1_000;
const ROUNDS = 40;

/** A variant: runs `calls` turns and returns the µs they took; `calls` per round is fixed per variant. */
interface Variant {
  calls: number;
  round: (calls: number) => Promise<number>;
}

/** Medians (µs per turn) of each variant, taking turns round by round after a shared warm-up. */
async function compare(variants: Record<string, Variant>): Promise<Record<string, number>> {
  const names = Object.keys(variants);
  const end = performance.now() + WARM_UP_MS;
  while (performance.now() < end)
    for (const name of names) await variants[name]!.round(variants[name]!.calls);
  const rounds: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (let i = 0; i < ROUNDS; i++) {
    for (const name of names) {
      const { calls, round } = variants[name]!;
      rounds[name]!.push((await round(calls)) / calls);
    }
  }
  return Object.fromEntries(names.map((name) => [name, median(rounds[name]!)]));
}

/** Times `turn` `calls` times in a row; resolves to the µs they took together. */
function timed(turn: () => Promise<unknown>): (calls: number) => Promise<number> {
  return async (calls) => {
    const started = performance.now();
    for (let i = 0; i < calls; i++) await turn();
    return (performance.now() - started) * 1000;
  };
}

/** Asks for `Weather({ city: 'Paris' })` until `rounds` tool results came back, then answers. */
function toolModel(rounds = 1) {
  return new AsyncMockLLM({
    record: false,
    responses: (messages) => {
      let results = 0;
      for (const message of messages) if (message.role === 'tool') results++;
      return results >= rounds
        ? 'Sunny in Paris.'
        : { toolCalls: [{ name: 'Weather', arguments: { city: 'Paris' } }] };
    },
  });
}

function weather(needsApproval: boolean) {
  return asyncTool({
    name: 'Weather',
    description: 'Current weather of a city',
    parameters: z.object({ city: z.string() }),
    needsApproval,
    run: ({ city }) => `Sunny in ${city}, 21 °C`,
  });
}

/** Sessions and journals are dropped every this many turns, so memory use stays flat. */
const RESET_EVERY = 1_000;

/**
 * A function-calling agent whose turns each use a new session; with `durable`, a new `MemoryStore` every
 * `RESET_EVERY` turns (a store keeps finished journals, and a resume lists the session's unfinished ones).
 */
function toolAgent(options: {
  durable: boolean;
  needsApproval: boolean;
  otherJournals?: number | undefined;
  rounds?: number | undefined;
}) {
  let agent!: AsyncFunctionCallingAgent;
  let session = RESET_EVERY;
  return () => {
    if (++session > RESET_EVERY) {
      session = 0;
      const durable: DurableOptions | undefined = options.durable
        ? { store: withJournals(options.otherJournals ?? 0) }
        : undefined;
      agent = new AsyncFunctionCallingAgent({
        llm: toolModel(options.rounds),
        actions: [weather(options.needsApproval)],
        durable,
        name: 'bench',
      });
    }
    return { agent, sessionId: session };
  };
}

/** A `MemoryStore` already holding `count` finished journals of other sessions of the agent. */
function withJournals(count: number): MemoryStore {
  const store = new MemoryStore();
  for (let i = 0; i < count; i++) {
    store.appendJournal('bench', `other-${i}`, `call-${i}`, { key: 'r', kind: 'begin' });
    store.finishJournal('bench', `call-${i}`);
  }
  return store;
}

/** One tool turn that does not pause. */
function plainTurn(durable: boolean, rounds = 1): () => Promise<AgentMessage> {
  const next = toolAgent({ durable, needsApproval: false, rounds });
  return () => {
    const { agent, sessionId } = next();
    return agent.call('Weather in Paris?', { sessionId });
  };
}

/**
 * One paused-and-resumed turn: the call pauses at the tool, then `resumeWith` approves it; `saved` also
 * takes the session through `stateDict` → JSON string → `loadStateDict` between the two (as a process that
 * stops and another that resumes would). `resumeTime` accumulates the µs of the resume calls alone.
 */
function pausedTurn(options: {
  durable: boolean;
  saved?: boolean | undefined;
  otherJournals?: number | undefined;
}) {
  const next = toolAgent({
    durable: options.durable,
    needsApproval: true,
    otherJournals: options.otherJournals,
  });
  const clock = { resumeTime: 0 };
  const turn = async () => {
    const { agent, sessionId } = next();
    const paused = await agent.call('Weather in Paris?', { sessionId });
    const [ask] = interruptsOf(paused);
    if (ask === undefined) throw new Error('the turn did not pause');
    if (options.saved) {
      const text = JSON.stringify(agent.stateDict(sessionId));
      agent.reset(sessionId);
      agent.loadStateDict(JSON.parse(text), sessionId);
    }
    const started = performance.now();
    const reply = await agent.call(resumeWith([{ id: ask.id, approve: true }]), { sessionId });
    clock.resumeTime += (performance.now() - started) * 1000;
    if (reply.content !== 'Sunny in Paris.') throw new Error(`unexpected reply ${String(reply.content)}`);
    return reply;
  };
  return { turn, clock };
}

/**
 * The journaling cost per step measured on the built package (`dist/`, when `npm run build` made it): the same
 * tool turns of 1 and 5 rounds, durable off and on.
 */
async function builtPerStep(): Promise<{ perStep: number; perCall: number } | undefined> {
  const entry = new URL('../dist/index.js', import.meta.url);
  if (!existsSync(entry)) return undefined;
  const lib = (await import(entry.href)) as typeof import('../src/index');
  const testing = (await import(
    new URL('../dist/testing/index.js', import.meta.url).href
  )) as typeof import('../src/testing/index');
  const weatherTool = lib.asyncTool({
    name: 'Weather',
    parameters: z.object({ city: z.string() }),
    run: ({ city }) => `Sunny in ${city}, 21 °C`,
  });
  const turn = (durable: boolean, rounds: number) => {
    let agent!: InstanceType<typeof lib.AsyncFunctionCallingAgent>;
    let session = RESET_EVERY;
    return timed(() => {
      if (++session > RESET_EVERY) {
        session = 0;
        agent = new lib.AsyncFunctionCallingAgent({
          name: 'bench',
          llm: new testing.AsyncMockLLM({
            record: false,
            responses: (messages) =>
              messages.filter((message) => message.role === 'tool').length >= rounds
                ? 'Sunny in Paris.'
                : { toolCalls: [{ name: 'Weather', arguments: { city: 'Paris' } }] },
          }),
          actions: [weatherTool],
          durable: durable ? { store: new lib.MemoryStore() } : undefined,
        });
      }
      return agent.call('Weather in Paris?', { sessionId: session });
    });
  };
  const times = await compare({
    off: { calls: TOOL_CALLS, round: turn(false, 1) },
    on: { calls: TOOL_CALLS, round: turn(true, 1) },
    off5: { calls: TOOL_CALLS / 4, round: turn(false, 5) },
    on5: { calls: TOOL_CALLS / 4, round: turn(true, 5) },
  });
  const perStep = (times.on5! - times.off5! - (times.on! - times.off!)) / 8;
  return { perStep, perCall: times.on! - times.off! - 3 * perStep };
}

const TOOL_CALLS = 200;
/** Finished journals of other sessions in the store of the crowded resume. */
const OTHER_JOURNALS = 10_000;

export const run: Suite = async (report) => {
  // (a) journaling per step, (c) the plain call, both durable off and on.
  const plainAgent = new AsyncAgent({
    llm: new AsyncMockLLM({ responses: () => 'ok', record: false }),
    template: 'You are terse.',
  });
  const durablePlain = () => {
    let agent!: AsyncAgent;
    let session = RESET_EVERY;
    return () => {
      if (++session > RESET_EVERY) {
        session = 0;
        agent = new AsyncAgent({
          llm: new AsyncMockLLM({ responses: () => 'ok', record: false }),
          template: 'You are terse.',
          durable: { store: new MemoryStore() },
        });
      }
      return agent.call('hi', { sessionId: session });
    };
  };
  let plainSession = 0;
  const plainCall = () => {
    if (++plainSession % 50_000 === 0)
      for (const id of plainAgent.memory!.sessions()) plainAgent.memory!.reset(id);
    return plainAgent.call('hi', { sessionId: plainSession });
  };
  const onePlainDurable = durablePlain();
  const journaling = await compare({
    off: { calls: TOOL_CALLS, round: timed(plainTurn(false)) },
    on: { calls: TOOL_CALLS, round: timed(plainTurn(true)) },
    off5: { calls: TOOL_CALLS / 4, round: timed(plainTurn(false, 5)) },
    on5: { calls: TOOL_CALLS / 4, round: timed(plainTurn(true, 5)) },
    plain: { calls: 1_000, round: timed(plainCall) },
    plainDurable: { calls: 1_000, round: timed(onePlainDurable) },
  });
  // A turn of R tool rounds makes 2R + 1 steps (R + 1 model turns, R tool runs): 5 rounds make 8 more than 1.
  const perStep = (journaling.on5! - journaling.off5! - (journaling.on! - journaling.off!)) / 8;
  const perCall = journaling.on! - journaling.off! - 3 * perStep;
  report({
    name: 'durable journaling (MemoryStore): cost per model/tool step',
    value: perStep,
    unit: 'µs',
    target: 2,
    note: `what each more step costs: tool turns of 1 and 5 rounds (3 and 11 steps, new session each), durable off ${journaling.off!.toFixed(2)} / ${journaling.off5!.toFixed(2)} µs, on ${journaling.on!.toFixed(2)} / ${journaling.on5!.toFixed(2)} µs`,
  });
  const built = await builtPerStep();
  if (built !== undefined) {
    report({
      name: 'durable journaling (MemoryStore), the built package: cost per model/tool step',
      value: built.perStep,
      unit: 'µs',
      target: 2,
      note: `dist/ as users run it (the figure above runs the sources under tsx, which wraps every closure the steps make for its keepNames); per call besides its steps ${built.perCall.toFixed(2)} µs`,
    });
  }
  report({
    name: 'durable journaling (MemoryStore): cost per call besides its steps',
    value: perCall,
    unit: 'µs',
    note: 'the begin entry (inputs and every memory length), closing earlier unfinished calls, the finish; the call runs its steps rather than the direct run',
  });
  report({
    name: 'AsyncAgent.call, single turn, durable off (same figure as core.ts, this run)',
    value: journaling.plain!,
    unit: 'µs',
    target: 5,
    note: `with durable: { store: MemoryStore } ${journaling.plainDurable!.toFixed(2)} µs (begin entry + 1 model step + finish)`,
  });
  report({
    name: 'AsyncFunctionCallingAgent tool turn, durable off (this run)',
    value: journaling.off!,
    unit: 'µs',
    target: 20,
    note: 'the tool-turn figure of function-calling.ts, measured here in-process',
  });

  // (b) the resume of a paused call.
  const memoryPaused = pausedTurn({ durable: false });
  const savedPaused = pausedTurn({ durable: false, saved: true });
  const durablePaused = pausedTurn({ durable: true });
  const crowdedPaused = pausedTurn({ durable: true, otherJournals: OTHER_JOURNALS });
  const resumeCalls = 100;
  const resumeRounds = {
    memory: [] as number[],
    saved: [] as number[],
    durable: [] as number[],
    crowded: [] as number[],
  };
  const withResume = (paused: typeof memoryPaused, into: number[]): Variant => ({
    calls: resumeCalls,
    round: async (calls) => {
      paused.clock.resumeTime = 0;
      const took = await timed(paused.turn)(calls);
      into.push(paused.clock.resumeTime / calls);
      return took;
    },
  });
  const resume = await compare({
    unpaused: { calls: resumeCalls, round: timed(plainTurn(false)) },
    memory: withResume(memoryPaused, resumeRounds.memory),
    saved: withResume(savedPaused, resumeRounds.saved),
    unpausedDurable: { calls: resumeCalls, round: timed(plainTurn(true)) },
    durable: withResume(durablePaused, resumeRounds.durable),
    crowded: withResume(crowdedPaused, resumeRounds.crowded),
  });
  const lastRounds = (values: number[]) => median(values.slice(-ROUNDS));
  report({
    name: 'pause + resume, own cost: paused-and-resumed tool turn minus the same turn unpaused',
    value: resume.memory! - resume.unpaused!,
    unit: 'µs',
    target: 50,
    note: `durable off (the loop's memory holds the pending call): ${resume.memory!.toFixed(2)} µs paused and resumed vs ${resume.unpaused!.toFixed(2)} µs unpaused; the resume call alone (tool run + last model turn + resume) ${lastRounds(resumeRounds.memory).toFixed(2)} µs`,
  });
  report({
    name: 'pause + resume, own cost, durable: { store: MemoryStore } (replay from the journal)',
    value: resume.durable! - resume.unpausedDurable!,
    unit: 'µs',
    target: 50,
    note: `${resume.durable!.toFixed(2)} µs paused and resumed vs ${resume.unpausedDurable!.toFixed(2)} µs unpaused, both durable; the resume call alone ${lastRounds(resumeRounds.durable).toFixed(2)} µs`,
  });
  report({
    name: `durable resume call with ${OTHER_JOURNALS.toLocaleString('en-US')} other calls journaled in the MemoryStore`,
    value: lastRounds(resumeRounds.crowded),
    unit: 'µs',
    note: `vs ${lastRounds(resumeRounds.durable).toFixed(2)} µs with at most ${RESET_EVERY.toLocaleString('en-US')}: a resume message without callId looks the session's unfinished call up among the namespace's journals`,
  });
  report({
    name: 'paused-and-resumed tool turn, durable off, through stateDict → JSON string → loadStateDict',
    value: resume.saved!,
    unit: 'µs',
    note: `the resume call alone ${lastRounds(resumeRounds.saved).toFixed(2)} µs; in memory without the round trip ${resume.memory!.toFixed(2)} µs`,
  });

  // (d) side by side: loaded only now, after lagent-ts's figures.
  const { langGraphApprovalSetup, langGraphApprovalTurn } = await import('./competitors/approval-langgraph');
  const langgraph = langGraphApprovalSetup();
  let thread = 0;
  const lg = await compare({
    langgraph: {
      calls: 5,
      round: timed(async () => {
        if (++thread % RESET_EVERY === 0) langgraph.reset();
        return langGraphApprovalTurn(langgraph, thread);
      }),
    },
  });
  const { agentsApprovalSetup, agentsApprovalTurn } = await import('./competitors/approval-openai-agents');
  const agents = agentsApprovalSetup();
  const oa = await compare({ agents: { calls: 10, round: timed(() => agentsApprovalTurn(agents)) } });
  report({
    name: 'side by side: OpenAI Agents JS, paused-and-resumed tool turn',
    value: oa.agents!,
    unit: 'µs',
    note: `tool() with needsApproval: true, result.interruptions, RunState toString → RunState.fromString, state.approve, run(agent, state); scripted Model, tracing off; ${(oa.agents! / resume.saved!).toFixed(1)}x lagent-ts through stateDict JSON (${resume.saved!.toFixed(2)} µs)`,
  });
  report({
    name: 'side by side: LangGraph.js, paused-and-resumed tool turn',
    value: lg.langgraph!,
    unit: 'µs',
    note: `interrupt() inside the tool run by ToolNode, MemorySaver, invoke(new Command({ resume })); scripted BaseChatModel; ${(lg.langgraph! / resume.memory!).toFixed(1)}x lagent-ts in memory (${resume.memory!.toFixed(2)} µs)`,
  });
  report({
    name: 'paused-and-resumed turn speed-up over OpenAI Agents JS (both serialized between pause and resume)',
    value: oa.agents! / resume.saved!,
    unit: 'x',
  });
  report({
    name: 'paused-and-resumed turn speed-up over LangGraph.js (both in memory)',
    value: lg.langgraph! / resume.memory!,
    unit: 'x',
  });
};
