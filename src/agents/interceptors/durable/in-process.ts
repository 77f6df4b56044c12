import { approvalRules } from '../../../core/approval-rules';
import { ValidationError } from '../../../schema/errors';
import type { SessionStore, StoredJournal } from '../../../stores/types';
import { deepClone } from '../../../utils/clone';
import type { AgentBase } from '../../agent-base';
import type { ResumeDecisions } from '../approvals/decisions';
import type { DurableOptions } from './journal';
import type { CallJournal } from './steps';

/*
 * Composites that are not durable, paused and resumed in one process. A user-written `forward` (or
 * `Sequential`) resumed after a sub-agent's tool stopped for approval runs again from the top: without a
 * journal, it would ask its planner again and hand the paused sub-agent a new plan, which asks again, forever.
 * So a composite whose tree has a tool that can ask for approval journals each of its calls in an in-process
 * journal (the durable call machinery, with the journal kept in this process only, and dropped when the
 * call finishes): resumed, it replays its completed sub-calls and goes on from the paused one. A composite
 * resumed without such a journal (paused in another process, or before `loadStateDict`; or nothing waits)
 * runs its forward afresh, and is refused, naming `durable`, as soon as that would make a model request or
 * run a tool before a waiting call took the decisions. Trees without approval rules are not journaled: their calls cost what
 * they did.
 */

/** The journals of paused calls, kept in this process: one agent's, all its sessions'. */
class InProcessJournals {
  readonly synchronous = true as const;
  readonly description = 'the in-process journal of paused calls';
  readonly #journals = new Map<string, StoredJournal>();

  appendJournal(_namespace: string, sessionId: string, callId: string, data: unknown): number {
    let journal = this.#journals.get(callId);
    if (journal === undefined) {
      journal = { callId, sessionId, entries: [], finished: false };
      this.#journals.set(callId, journal);
    }
    // A copy: a replay must not hand out objects the call has since changed.
    journal.entries.push({ seq: journal.entries.length, data: deepClone(data) });
    return journal.entries.length - 1;
  }

  readJournal(_namespace: string, callId: string): StoredJournal | undefined {
    return this.#journals.get(callId);
  }

  /** A finished call is dropped: nothing replays it. */
  finishJournal(_namespace: string, callId: string): void {
    this.#journals.delete(callId);
  }

  deleteJournal(_namespace: string, callId: string): boolean {
    return this.#journals.delete(callId);
  }

  listJournals(_namespace: string, sessionId: string, options?: { unfinished?: boolean }): string[] {
    const ids: string[] = [];
    for (const journal of this.#journals.values()) {
      if (journal.sessionId === sessionId && !(options?.unfinished === true && journal.finished))
        ids.push(journal.callId);
    }
    return ids;
  }
}

/** Forwards that resume a paused call from the memory they keep (the prebuilt loops): no journal needed. */
const RESUMES_FROM_MEMORY = new WeakSet<object>();

/** Registers a `forward` that resumes its paused calls from its memory (see {@link implicitJournal}). */
export function resumesFromMemory(forward: object): void {
  RESUMES_FROM_MEMORY.add(forward);
}

/** Marks the clients of remote agents (HTTP, queue): their interrupts reach the local tree that holds them. */
export const REMOTE_AGENT: unique symbol = Symbol.for('lagent-ts.remoteAgent');

/** Agents whose `forward` called a remote agent, whose interrupts reach the local call. */
const CALLS_REMOTE = new WeakSet<object>();

/** Notes that `agent`'s forward calls a remote agent (which may stop to ask). */
export function callsRemote(agent: object): void {
  CALLS_REMOTE.add(agent);
}

/** Each composite's in-process journals. */
const JOURNALS = new WeakMap<AgentBase, DurableOptions>();

/** The in-process journals of an implicit durable call, as the `durable` option gives a store. */
export function isInProcess(options: DurableOptions): boolean {
  return options.store instanceof InProcessJournals;
}

/**
 * The in-process journal for an outermost call of `agent` without `durable`: for a composite (a `forward` of
 * its own, not `builtin`, that does not resume from memory) whose tree can ask for approval, or whose call
 * `asks` (it is given a resume message, or client tools); else undefined (the common case: one lookup).
 */
export function implicitJournal(
  agent: AgentBase,
  forward: object,
  builtin: boolean,
  asks: boolean,
): DurableOptions | undefined {
  if (builtin || RESUMES_FROM_MEMORY.has(forward)) return undefined;
  if (!asks && !mayAskCached(agent)) return undefined;
  let journals = JOURNALS.get(agent);
  if (journals === undefined) {
    journals = { store: new InProcessJournals() as unknown as SessionStore };
    JOURNALS.set(agent, journals);
  }
  return journals;
}

/** What {@link mayAsk} found for a tree, and the version of the approval rules it looked at. */
const FOUND = new WeakMap<AgentBase, { version: number; mayAsk: boolean }>();

/**
 * {@link mayAsk}, looked up again only when an executor was made or its tools changed since (a walk of the
 * tree costs a few µs per call), or when the tree's own forward met a remote agent.
 */
function mayAskCached(agent: AgentBase): boolean {
  if (CALLS_REMOTE.has(agent)) return true;
  const found = FOUND.get(agent);
  if (found !== undefined && found.version === approvalRules.version) return found.mayAsk;
  const value = mayAsk(agent);
  FOUND.set(agent, { version: approvalRules.version, mayAsk: value });
  return value;
}

/** Whether some agent of the tree holds an executor with an approval rule, or a remote agent's client. */
function mayAsk(agent: AgentBase): boolean {
  for (const [, node] of agent.namedAgents()) {
    if (CALLS_REMOTE.has(node)) return true;
    for (const value of Object.values(node)) {
      if (value === null || typeof value !== 'object') continue;
      if ((value as { [REMOTE_AGENT]?: unknown })[REMOTE_AGENT] === true) return true;
      const executor = value as { mayNeedApproval?: () => boolean };
      if (typeof executor.mayNeedApproval === 'function' && executor.mayNeedApproval()) return true;
    }
  }
  return false;
}

/**
 * A composite resumed without the journal of its paused call runs its forward afresh: refused, naming
 * `durable`, when that forward would make a model request or run a tool before the waiting call took its
 * decisions (it would do again what the paused call did).
 */
export function refuseRerunsBeforeDecisions(
  journal: CallJournal,
  resume: () => ResumeDecisions | undefined,
  agent: AgentBase,
): void {
  journal.beforeLive = (key, kind, name) => {
    if (resume()?.reached === true) {
      journal.beforeLive = undefined;
      return;
    }
    throw new ValidationError({
      message: `${agent.name}: no journal of a paused call of this session is kept in this process (nothing waits for a decision, or the call paused in another process or before loadStateDict), and resuming would run the forward again from the top: a ${kind} call of ${JSON.stringify(name)} (step ${key}) before any call took the decisions. Give ${agent.name} durable: { store } to resume its calls in any process`,
      field: 'decisions',
    });
  };
}
