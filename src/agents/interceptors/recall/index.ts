import { type Slot, slot } from '../../../core/interceptors';
import type { Steps } from '../../../core/steps';
import type { ModelReply } from '../../../llms/types';
import type { Memory } from '../../../memory/memory';
import type { EmbeddingUsage } from '../../../retrieval/types';
import type { AgentMessage } from '../../../schema/agent-message';
import { ConfigurationError } from '../../../schema/errors';
import { type SessionId, sessionKey } from '../../../schema/session';
import { toolCallsOf } from '../../../schema/tool-calls';
import type { AgentBase, RecalledMessage } from '../../agent-base';
import { contentToText } from '../../aggregator/content';
import { buildPrompt } from '../../lifecycle/builtin-forward';
import { emitEvent } from '../../lifecycle/events';
import type { Turn } from '../../lifecycle/turn';
import { AGENT, MODEL } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import type { ModelContext } from '../model-context';
import { enclosingResourceId } from '../resource-id';
import { SYNC_AGENT, sessionBindingOf } from '../session-store/persist';
import { METER, SESSION_STATE } from '../slots';
import { MAX_TEXT, type Recall, type RecallGroup } from './recall';
import { RECALL_INDEX, WINDOW_START, WITH_RECALLED } from './symbols';

/*
 * Semantic recall (`TokenWindowAggregator`'s `recall`), as an interceptor. Its agent hook notes where the call's
 * session stood when the call began (everything before is committed: earlier calls finished, and with a session
 * store, loaded from it) and, once the call succeeded and its turn is committed, indexes the turn in the
 * background (the reply never waits for it). Its model hook, before the prompt goes out: indexes whatever
 * committed messages are not yet (a process that crashed between a commit and its embedding, a background
 * indexing still running), embeds the newest turn's message (the user's; in a function-calling loop, the one
 * that started it), searches the store, and has the aggregator place what it found before that message.
 *
 * It runs inside the durable journal: a replayed model step is answered from the journal before this hook, so a
 * replay never embeds again and its prompt is the recorded one. And outside the budget, which then counts the
 * prompt with its recalled block; the embedding tokens of the search are added to the call's meter.
 */

export type { RecallOptions } from './recall';

/** What the agent hook notes for the model hook. */
interface RecallState {
  memory: Memory | undefined;
  /** The session's length when the call began: its committed messages. */
  start: number;
  namespace: string;
  session: string;
  /** Found once per call, placed before each of its model calls. */
  query?: { text: string; groups: Promise<RecallGroup[]> } | undefined;
}

const RECALL: Slot<RecallState> = slot('recall');

function recallOf(agent: AgentBase): Recall | undefined {
  return (agent.aggregator as { [RECALL_INDEX]?: Recall } | undefined)?.[RECALL_INDEX];
}

/** Embedding tokens count against the call's budget, as prompt tokens. */
function meterUsage(turn: Turn): ((usage: EmbeddingUsage) => void) | undefined {
  const meter = turn.find(METER);
  return meter === undefined ? undefined : (usage) => meter.add({ promptTokens: usage.tokens });
}

/**
 * Where the newest turn starts: the newest message neither the agent's nor a tool's result (the user's, or
 * another agent's), or -1. A function-calling loop's later model calls are made by calls whose inputs are tool
 * results; the turn is still the user's message before them.
 */
function newestTurn(messages: readonly AgentMessage[], name: string): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.sender !== name && toolCallsOf(message.formatted) === null) return i;
  }
  return -1;
}

/** The text recall searches with: the newest turn's (its start, as a message is indexed). */
function queryText(message: AgentMessage): string {
  const text = contentToText(message.content).trim();
  return text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text;
}

/** With `memory: { store }`: whether the store has a session (one read of it per session a search matched). */
function storedSessions(agent: AgentBase): ((session: string) => Promise<boolean>) | undefined {
  const binding = sessionBindingOf(agent);
  if (binding === undefined) return undefined;
  return async (session) => (await binding.store.readSession(binding.namespace, session)) !== undefined;
}

/** The outermost call a call is made in, when it is not one itself. */
function outermost(turn: Turn): { finished?: boolean; failed: boolean } | undefined {
  let frame = turn.parent;
  if (frame === undefined) return undefined;
  while (frame.parent !== undefined) frame = frame.parent;
  return frame as { finished?: boolean; failed: boolean };
}

/**
 * Indexes the call's turn once it is committed: with a session store, once its commit landed (a call whose
 * commit failed took its messages back and is skipped); without one, once the call returned with its messages
 * still in memory.
 */
function indexWhenCommitted(
  turn: Turn,
  recall: Recall,
  state: RecallState,
  memory: Memory,
  added: readonly AgentMessage[],
): void {
  const sessionState = turn.find(SESSION_STATE);
  // Without a store, a call made inside another is kept once the outermost returned (it may yet fail).
  const root = sessionState === undefined ? outermost(turn) : undefined;
  const sessionId = turn.options.sessionId;
  const job = new Promise<void>((resolve) => {
    let waits = 0;
    const wait = () => {
      // The commit is a store round trip away; an enclosing call's may be much later: look less often then.
      if (++waits <= 3) setImmediate(run);
      else setTimeout(run, Math.min(50, 2 ** (waits - 3)));
    };
    const run = () => {
      if (sessionState !== undefined && !sessionState.committed) {
        if (sessionState.hold.released) resolve();
        else wait();
        return;
      }
      if (root !== undefined && (root.failed || root.finished === false)) {
        if (root.failed) resolve();
        else wait();
        return;
      }
      const messages = memory.getMemory({ recentN: Number.MAX_SAFE_INTEGER });
      for (let i = 0; i < added.length; i++) {
        if (messages[state.start + i] !== added[i]) return resolve();
      }
      recall
        .index(messages, state.start + added.length, {
          namespace: state.namespace,
          session: state.session,
          sessionId,
        })
        .catch((error: unknown) => {
          process.emitWarning(
            `${turn.agent.name}: semantic recall could not index session ${JSON.stringify(String(sessionId))} (${error instanceof Error ? error.message : String(error)}); it is indexed again before its next recall`,
            { code: 'LAGENT_RECALL_INDEX_FAILED' },
          );
        })
        .then(resolve);
    };
    setImmediate(run);
  });
  recall.track(job);
}

const interceptor = {
  name: 'recall',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const agent = turn.agent;
    const recall = recallOf(agent)!;
    if ((agent as unknown as Record<symbol, unknown>)[SYNC_AGENT] === true) {
      throw new ConfigurationError({
        message: `${agent.name}: semantic recall (TokenWindowAggregator's recall) embeds and searches asynchronously, which a synchronous agent cannot wait for: use an Async* agent`,
      });
    }
    const sessionId: SessionId = turn.options.sessionId;
    const session = String(sessionKey(sessionId));
    const namespace = recall.namespaceOf(session, enclosingResourceId(turn), agent.name);
    const memory = agent.memory?.get(sessionId);
    const state: RecallState = { memory, start: memory?.length ?? 0, namespace, session };
    turn.set(RECALL, state);
    const reply = yield* next();
    const after = memory ?? agent.memory?.get(sessionId);
    if (after !== undefined) {
      const added = after.getMemory({ recentN: Number.MAX_SAFE_INTEGER }).slice(state.start);
      if (added.length > 0) indexWhenCommitted(turn, recall, state, after, added);
    }
    return reply;
  },

  *modelCall(context: ModelContext, next: () => Steps<ModelReply>): Steps<ModelReply> {
    const turn = context.call;
    const agent = turn.agent;
    const state = turn.get(RECALL);
    const sessionId = context.sessionId;
    const memory = agent.memory?.get(sessionId);
    if (state === undefined || memory === undefined) return yield* next();
    const recall = recallOf(agent)!;
    const messages = memory.getMemory({ recentN: Number.MAX_SAFE_INTEGER });
    const newest = newestTurn(messages, agent.name);
    if (newest === -1) return yield* next();
    // What came before the newest turn was committed by earlier calls; the newest turn and what followed it
    // (a loop's tool rounds) are this call's, never recalled nor indexed yet.
    const committed = Math.min(state.start, newest);
    if (state.query === undefined) {
      const text = queryText(messages[newest]!);
      if (text === '') return yield* next();
      const onUsage = meterUsage(turn);
      const signal = context.signal;
      const aggregator = agent.aggregator as unknown as {
        [WINDOW_START](...args: unknown[]): number;
      };
      const windowStart = Math.min(
        committed,
        aggregator[WINDOW_START](memory, agent.name, agent.outputFormat, agent.template),
      );
      // A search that fails (the embedder or the store down) fails the call: no reply is made without the
      // memory it should have had, unnoticed.
      const target = { namespace: state.namespace, session: state.session, sessionId, signal, onUsage };
      const exists = recall.scope === 'resource' ? storedSessions(agent) : undefined;
      const groups = recall
        .index(messages, committed, target)
        .then(() => recall.search({ ...target, memory, committed, windowStart, text, exists }));
      state.query = { text, groups };
    }
    const groups = (yield state.query.groups) as RecallGroup[];
    if (groups.length === 0) return yield* next();
    const { prompt, kept } = (
      agent.aggregator as unknown as {
        [WITH_RECALLED]: (
          memory: Memory,
          groups: readonly RecallGroup[],
          topK: number,
          before: number,
          sessionId: SessionId,
          build: () => unknown,
        ) => { prompt: ReturnType<typeof buildPrompt>; kept: readonly RecalledMessage[] };
      }
    )[WITH_RECALLED](memory, groups, recall.topK, newest, sessionId, () =>
      buildPrompt(agent, turn.messages, sessionId),
    );
    context.messages = prompt;
    if (kept.length === 0) return yield* next();
    emitEvent(agent, 'recall', { agent, sessionId, query: state.query.text, recalled: kept, path: '' });
    return yield* next();
  },
};

export const recall: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  static: (agent) => (recallOf(agent) !== undefined ? AGENT | MODEL : 0),
};
