import { driveAsync, driveSync, type Steps } from '../core/steps';
import type { ToolCall } from '../schema/chat-message';
import { type Interrupt, interruptId } from '../schema/interrupts';
import type { SessionId } from '../schema/session';
import type { StoredJournal } from '../stores/types';
import { isThenable } from '../utils/is';
import type { AgentBase } from './agent-base';
import { DURABLE } from './interceptors/durable/journal';
import { settled } from './interceptors/durable/steps';
import { SYNC_AGENT } from './interceptors/session-store/persist';

/*
 * What a paused session waits for, read back without calling the agent: for a page reloaded, a second tab, a
 * terminal that lost the interrupt reply. Two sources, both already kept for the resume itself:
 *
 * - the memories of the session: each prebuilt loop (function calling, ReAct, the InternLM agents) keeps the
 *   model's unanswered call as the last message of its model-facing sub-agent, and says which calls it
 *   holds there (`WAITING_CALLS`); the ones its executor gates, and those of client tools, are what waits;
 * - the durable journal, when the agent is durable: an interrupted durable call records the interrupts it
 *   returned, so a call paused anywhere (a user's own forward, a remote sub-agent) is found, by another
 *   process too.
 */

/** The calls a loop holds unanswered for a session, and the executor that gates them (internal). */
export interface WaitingCalls {
  calls: readonly ToolCall[];
  executor: unknown;
}

/**
 * The method by which a prebuilt loop tells the calls it holds unanswered in a session (the model's last
 * message of its sub-agent, when its previous call stopped before running them), else undefined (internal).
 */
export const WAITING_CALLS: unique symbol = Symbol('lagent-ts.waitingCalls');

/**
 * The sub-agent whose memory holds a prebuilt loop's tool turns (the model's calls and their results, beside
 * the loop's own memory of questions and answers), for a page that shows the turns (internal).
 */
export const TOOL_TURNS: unique symbol = Symbol('lagent-ts.toolTurns');

interface Loop {
  [WAITING_CALLS](sessionId: SessionId): WaitingCalls | undefined;
}

/** The `kind` of the journal entry an interrupted durable call writes: the interrupts of its reply. */
export const INTERRUPT_ENTRY = 'interrupted';

interface Gate {
  approvalNeeded(call: ToolCall, context: { sessionId: SessionId }): boolean | Promise<boolean>;
}

/**
 * The interrupts a session of `agent` waits for: what a resume message (`resumeWith`) on that session would
 * answer, with the ids the interrupt reply gave. Empty when nothing waits. Reads the session's memories (the
 * prebuilt loops keep an unanswered call as their sub-agent's last message) and, for a durable agent, its
 * latest unfinished journal; it calls no model and runs no tool. A synchronous agent gets the list, an
 * async one a promise of it (a tool's `needsApproval` or the store may answer later).
 *
 * The memories are read as this process holds them: an agent whose sessions live in a store (`memory: {
 * store }`) but are not durable shows the sessions this process has called.
 *
 * @example
 * const reply = await agent.call('Delete the old logs', { sessionId: 'alice' });
 * // later, elsewhere (a reloaded page):
 * const waiting = await pendingInterrupts(agent, 'alice'); // [{ id, kind: 'approval', path, toolCall }]
 * await agent.call(resumeWith([{ id: waiting[0].id, approve: true }]), { sessionId: 'alice' });
 */
export function pendingInterrupts(
  agent: AgentBase,
  sessionId: SessionId = 0,
): Interrupt[] | Promise<Interrupt[]> {
  const steps = pendingSteps(agent, sessionId);
  return (agent as unknown as Record<symbol, unknown>)[SYNC_AGENT] === true
    ? driveSync(steps)
    : driveAsync(steps);
}

function* pendingSteps(agent: AgentBase, sessionId: SessionId): Steps<Interrupt[]> {
  const found = new Map<string, Interrupt>();
  for (const interrupt of yield* journaled(agent, sessionId)) found.set(interrupt.id, interrupt);
  for (const [prefix, node] of agent.namedAgents()) {
    const waiting = (node as unknown as Partial<Loop>)[WAITING_CALLS]?.(sessionId);
    if (waiting === undefined) continue;
    const gate = waiting.executor as Partial<Gate> | null;
    const path = prefix === '' ? '' : prefix.slice(0, -1);
    for (const call of waiting.calls) {
      // A call of a client tool waits for its caller's result.
      if (call.client === true) {
        const id = interruptId(path, call);
        if (!found.has(id)) found.set(id, { id, kind: 'client-tool', path, toolCall: { ...call } });
        continue;
      }
      // An executor of another kind has no approval rules: nothing of its calls waits.
      if (typeof gate?.approvalNeeded !== 'function') continue;
      let needed = gate.approvalNeeded(call, { sessionId });
      if (isThenable(needed)) needed = (yield needed) as boolean;
      if (!needed) continue;
      const id = interruptId(path, call);
      if (!found.has(id)) found.set(id, { id, kind: 'approval', path, toolCall: { ...call } });
    }
  }
  return [...found.values()];
}

/** The interrupts of the session's latest unfinished durable call, when its journal ends with them. */
function* journaled(agent: AgentBase, sessionId: SessionId): Steps<Interrupt[]> {
  const durable = agent[DURABLE];
  if (durable === undefined) return [];
  const { store } = durable;
  const namespace = durable.namespace ?? agent.name;
  const ids = (yield* settled(
    store.listJournals(namespace, String(sessionId), { unfinished: true }),
  )) as string[];
  const callId = ids.at(-1);
  if (callId === undefined) return [];
  const journal = (yield* settled(store.readJournal(namespace, callId))) as StoredJournal | undefined;
  const last = journal?.entries.at(-1)?.data as { kind?: unknown; result?: unknown } | undefined;
  // Anything after the interrupts (a resume, a step) means the call went on: it does not wait any more.
  if (last?.kind !== INTERRUPT_ENTRY || !Array.isArray(last.result)) return [];
  return last.result as Interrupt[];
}
