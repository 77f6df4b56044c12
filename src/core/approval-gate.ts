import type { AgentMessage } from '../schema/agent-message';
import type { Steps } from './steps';

/*
 * Tool approval for executors called by a user's own `forward`. The prebuilt loops ask about each round of
 * tool calls before they hand it to their executor (agents/prebuilt/approval.ts) and mark the message they
 * hand over; an executor given an unmarked native tool-call message inside an agent call asks the same
 * question itself, through the gate the agents layer registers here, so a composite's executor pauses the
 * call like a loop's.
 */

/** What the gate decided: run the message as it is, or the calls to run and the answers already known. */
export type GatePlan =
  | { run: true }
  | { run: false; message: AgentMessage | undefined; calls: unknown[]; answers: unknown[] };

/** The gate: asks about each call of `message` for `executor`; throws an interrupt for an undecided one. */
export type ExecutorGate = (executor: unknown, message: AgentMessage, sessionId: unknown) => Steps<GatePlan>;

/** The registered gate (set by the agents layer when it loads). */
export const executorGate: { run: ExecutorGate | undefined } = { run: undefined };

/** Messages whose tool calls a prebuilt loop already asked about. */
export const GATED = new WeakSet<object>();

/**
 * Bumped whenever an executor is made or its tools change: what an agent tree found about approval rules
 * (whether its calls must be journaled to resume) holds while this stays the same.
 */
export const approvalRules = { version: 0 };
