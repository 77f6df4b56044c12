import type { AgentMessage } from '../schema/agent-message';
import { type Slot, slot } from './interceptors';
import type { Steps } from './steps';

/*
 * What executors (the actions layer) need of tool approval, which the approvals interceptor of the agents layer
 * provides at call time: an executor given a native tool-call message inside an agent call asks the round
 * planner it finds in the call's slots about the round, so a composite's executor pauses the call like a loop's.
 * A loop that planned a round itself hands it over marked `PLANNED`.
 */

/** What a planner decided: run the message as it is, or the calls to run and the answers already known. */
export type GatePlan =
  | { run: true }
  | { run: false; message: AgentMessage | undefined; calls: unknown[]; answers: unknown[] };

/** Plans a round of tool calls for an executor: throws an interrupt for a call that waits for a decision. */
export interface RoundPlanner {
  plan(executor: unknown, message: AgentMessage, sessionId: unknown): Steps<GatePlan>;
}

/** Where a call keeps its round planner (set by the approvals interceptor). */
export const ROUND_PLANNER: Slot<RoundPlanner> = slot('approval rounds');

/** The executor call option of a round a loop planned already: the executor runs it as it is (internal). */
export const PLANNED: unique symbol = Symbol('lagent-ts.planned');

/**
 * Bumped whenever an executor is made or its tools change: what an agent tree found about approval rules
 * (whether its calls must be journaled to resume) holds while this stays the same.
 */
export const approvalRules = { version: 0 };
