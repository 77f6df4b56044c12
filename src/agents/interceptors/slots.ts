import type { DurableScope } from '../../core/call-context';
import { type Slot, slot } from '../../core/interceptors';
import type { OpenAITool } from '../../schema/chat-message';
import type { Decision } from '../../schema/interrupts';
import type { ResumeDecisions } from './approvals/decisions';
import type { Budget, Meter } from './budget/meter';
import type { GuardSpec } from './guardrails/guards';
import type { GuardState } from './guardrails/index';
import type { SessionState } from './session-store/commit';
import type { Span } from './tracing/spans';

/*
 * The slots the built-in concerns keep their state in (one key each), in one leaf module: a concern reads
 * another's state through its slot (a durable call commits through the session store's, the approvals concern
 * annotates the tracing span), never through its code.
 */

/** A call's `invoke_agent` span (tracing). */
export const SPAN: Slot<Span> = slot('span');
/** A budgeted call's meter (budget). */
export const METER: Slot<Meter> = slot('budget');
/** The budget a durable call was made with, when it is replayed without one (set by the durable journal). */
export const RECORDED_BUDGET: Slot<Budget> = slot('recorded budget');
/** A call's place in a durable journal: its own journal's root, or a child of its caller's (durable). */
export const SCOPE: Slot<DurableScope> = slot('durable scope');
/** A resumed call's decisions (approvals); the rounds of the calls made inside it find them. */
export const RESUME: Slot<ResumeDecisions> = slot('resume decisions');
/** The tools a call's caller runs itself (`clientTools`, checked; a durable replay's as recorded); calls inside find them. */
export const CLIENT_TOOLS: Slot<readonly OpenAITool[]> = slot('client tools');
/** The decisions earlier resumes of a durable call gave (set by the durable journal when it replays a call). */
export const EARLIER: Slot<readonly Decision[]> = slot('earlier decisions');
/** The tool guardrails in force in a call: its own and its callers' (guardrails). */
export const TOOL_GUARDS: Slot<readonly GuardSpec[]> = slot('tool guardrails');
/** A call's guardrails running alongside it (guardrails). */
export const GUARDS: Slot<GuardState> = slot('guardrails');
/** A call's hold on its stored session (session store). */
export const SESSION_STATE: Slot<SessionState> = slot('session store');
