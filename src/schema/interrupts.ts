import { AgentMessage } from './agent-message';
import type { ToolCall } from './chat-message';
import { ValidationError } from './errors';

/*
 * Interrupts: a call that stops to ask a person (a tool call that needs approval), or its caller (a call of a
 * tool the caller answers itself: `clientTools`), and the message that lets it go on. The reply of an interrupted call is an ordinary `AgentMessage` of `type: 'interrupt'`; the
 * answer is one of `type: 'resume'`. Both are plain data, so they cross HTTP, queues and files as they are.
 */

/** The `type` of a reply that stopped to ask a person. */
export const INTERRUPT_TYPE = 'interrupt';
/** The `type` of the message that answers an interrupt. */
export const RESUME_TYPE = 'resume';

/** One question a paused call asks: run this tool call? */
export interface Interrupt {
  /** Names the question in a {@link Decision}: unique in the call (the tool call's id, after the agent's path). */
  id: string;
  /**
   * `'approval'`: the tool call needs a person's decision. `'check'`: the call was made with `askBeforeTools`
   * (a remote client whose caller has tool guardrails), so it stops before every tool call it would run, for
   * its caller to check (a remote client answers these itself). `'client-tool'`: the model called one of the
   * call's `clientTools`, which the caller runs: answer it with `{ id, approve: true, result }` (or decline it).
   */
  kind: 'approval' | 'check' | 'client-tool';
  /** The dotted path of the agent that asks, in the tree of the agent that was called (`''`: that agent). */
  path: string;
  toolCall: ToolCall;
}

/**
 * The answer to one {@link Interrupt}: run it (with edited `arguments`), or not (and why). A `'client-tool'`
 * interrupt is answered with the tool's `result` as the caller ran it (the model reads it as the tool's output),
 * or declined.
 */
export type Decision =
  | {
      id: string;
      approve: true;
      arguments?: string | Record<string, unknown> | undefined;
      /** The output of a client tool's call, which the caller ran (`'client-tool'` interrupts only). */
      result?: string | undefined;
    }
  | { id: string; approve: false; reason?: string | undefined };

/** What an interrupted call returns: `formatted.interrupts` lists what it waits for. */
export type InterruptReply = AgentMessage<string, { interrupts: Interrupt[] }>;

/** The message that resumes a paused session: `formatted.decisions`. */
export type ResumeMessage = AgentMessage<string, { decisions: Decision[] }>;

/** The interrupts of a reply: empty unless the call stopped to ask (`type: 'interrupt'`). */
export function interruptsOf(reply: AgentMessage | null | undefined): Interrupt[] {
  if (!(reply instanceof AgentMessage) || reply.type !== INTERRUPT_TYPE) return [];
  const interrupts = (reply.formatted as { interrupts?: unknown } | null)?.interrupts;
  return Array.isArray(interrupts) ? (interrupts as Interrupt[]) : [];
}

/**
 * The message that resumes a paused session with `decisions` (one per interrupt: those left out keep
 * waiting). Call the agent with it on the same session.
 *
 * @example
 * const reply = await agent.call('Delete the old logs', { sessionId });
 * const [ask] = interruptsOf(reply);
 * await agent.call(resumeWith([{ id: ask.id, approve: true }]), { sessionId });
 */
export function resumeWith(decisions: readonly Decision[]): ResumeMessage {
  if (!Array.isArray(decisions)) {
    throw new ValidationError({
      message: 'resumeWith expects an array of decisions ({ id, approve })',
      field: 'decisions',
    });
  }
  const checked = checkedDecisions(decisions);
  return new AgentMessage({
    sender: 'user',
    type: RESUME_TYPE,
    content: checked
      .map((d) => `${d.approve ? (d.result === undefined ? 'approve' : 'result of') : 'decline'} ${d.id}`)
      .join('\n'),
    formatted: { decisions: checked },
  });
}

/** The decisions a message carries, when it is a resume message (else undefined). */
export function decisionsOf(message: AgentMessage): Decision[] | undefined {
  if (message.type !== RESUME_TYPE) return undefined;
  const decisions = (message.formatted as { decisions?: unknown } | null)?.decisions;
  if (!Array.isArray(decisions)) {
    throw new ValidationError({
      message: 'a message of type "resume" must carry formatted.decisions: an array of { id, approve }',
      field: 'formatted.decisions',
    });
  }
  return checkedDecisions(decisions);
}

/** Each decision checked; an id decided twice (the same way or not) is refused rather than one of them winning. */
function checkedDecisions(decisions: readonly unknown[]): Decision[] {
  const checked = decisions.map(checkDecision);
  if (checked.length > 1) {
    const seen = new Set<string>();
    for (const decision of checked) {
      if (seen.has(decision.id)) {
        throw new ValidationError({
          message: `the decisions name the interrupt ${JSON.stringify(decision.id)} twice; give one decision per interrupt`,
          field: 'decisions',
        });
      }
      seen.add(decision.id);
    }
  }
  return checked;
}

function checkDecision(value: unknown, index: number): Decision {
  const d = value as Partial<Decision> | null;
  if (d === null || typeof d !== 'object' || typeof d.id !== 'string' || typeof d.approve !== 'boolean') {
    throw new ValidationError({
      message: `decision ${index} must be { id: string, approve: boolean, ... }, got ${JSON.stringify(value)}`,
      field: 'decisions',
    });
  }
  if (d.approve) {
    const args = (d as { arguments?: unknown }).arguments;
    if (args !== undefined && typeof args !== 'string' && (typeof args !== 'object' || args === null)) {
      throw new ValidationError({
        message: `decision ${JSON.stringify(d.id)}: arguments must be a JSON object or its text`,
        field: 'arguments',
      });
    }
    const result = (d as { result?: unknown }).result;
    if (result !== undefined) {
      if (typeof result !== 'string') {
        throw new ValidationError({
          message: `decision ${JSON.stringify(d.id)}: result (a client tool's output) must be a string, got ${typeof result}`,
          field: 'result',
        });
      }
      if (args !== undefined) {
        throw new ValidationError({
          message: `decision ${JSON.stringify(d.id)}: give a client tool's result or edited arguments, not both`,
          field: 'result',
        });
      }
      return { id: d.id, approve: true, result };
    }
    return args === undefined
      ? { id: d.id, approve: true }
      : { id: d.id, approve: true, arguments: args as Record<string, unknown> };
  }
  const reason = (d as { reason?: unknown }).reason;
  if (reason !== undefined && typeof reason !== 'string') {
    throw new ValidationError({
      message: `decision ${JSON.stringify(d.id)}: reason must be a string`,
      field: 'reason',
    });
  }
  return reason === undefined ? { id: d.id, approve: false } : { id: d.id, approve: false, reason };
}

/** The reason given to the model for calls declined because the user wrote something else instead. */
export const SUPERSEDED_REASON = 'the user sent a new message';

/** One question of an {@link InterruptSignal}. */
export interface InterruptAsk {
  agent: object;
  toolCall: ToolCall;
  path?: string | undefined;
  /** @default 'approval' */
  kind?: Interrupt['kind'] | undefined;
}

/**
 * Thrown through the agent tree by a call that needs a person's decision, up to the outermost call, which
 * returns it as an interrupt reply (internal: users see the reply). The calls it passes through keep what
 * they did: nothing is rolled back.
 */
export class InterruptSignal extends Error {
  /**
   * What is asked, by the agent that asks: its path is found by the outermost call. `path`, when set, is
   * where below that agent the question comes from (a remote agent's interrupt, re-rooted by its client).
   */
  readonly asks: InterruptAsk[];

  constructor(asks: InterruptAsk[]) {
    super(`the call stopped to ask for approval of ${asks.map((a) => a.toolCall.name).join(', ')}`);
    this.name = 'InterruptSignal';
    this.asks = asks;
  }
}

/** The id of an interrupt: the tool call's id after the asking agent's path. */
export function interruptId(path: string, toolCall: ToolCall): string {
  return path === '' ? toolCall.id : `${path}:${toolCall.id}`;
}

/** The id of a `'check'` interrupt: never that of the same tool call's approval. */
export function checkInterruptId(path: string, toolCall: ToolCall): string {
  return `${interruptId(path, toolCall)}~check`;
}
