import { createHash } from 'node:crypto';
import type { LagentMessageJSON } from '../../schema/agent-message';
import type { SessionId } from '../../schema/session';

/** The BullMQ job name of an agent call. */
export const CALL_JOB = 'call';

/**
 * The data of a call job, in Lagent's words (the body of its `/chat_completion`): the input messages in
 * Python Lagent's shape, the session, and the call's other options (JSON values only).
 */
export interface CallJobData {
  message: LagentMessageJSON[];
  session_id: SessionId;
  kwargs: Record<string, unknown>;
  /** Set for a run (`AsyncQueueAgent.start`): the worker logs the call to the run's log in Redis. */
  run?: RunJob | undefined;
}

/** The run a job is: its id, whether it goes on with a run waiting for a decision, and its log's times. */
export interface RunJob {
  id: string;
  resume?: boolean | undefined;
  retainMs?: number | undefined;
  idleTtlMs?: number | undefined;
  maxEvents?: number | undefined;
}

/** The BullMQ job id of a run's job (a run that goes on after a decision is another job of the same run). */
export function runJobId(runId: string, lastSeq: number): string {
  return `run-${createHash('sha256').update(`${runId}\u0000${lastSeq}`).digest('hex').slice(0, 40)}`;
}

/** What a caller publishes on the cancel channel to stop a run, wherever its job runs. */
export const RUN_CANCEL_PREFIX = 'run:';

/** Call options that belong to the calling process and never go into a job. */
const LOCAL_OPTIONS = new Set(['sessionId', 'signal', 'timeout', 'durable']);

/**
 * The options of a call that travel with its job: JSON values, minus the local ones. A client called inside an
 * agent call (`insideCall`) leaves out `callId`, which names the enclosing call.
 */
export function jobKwargs(
  options: Readonly<Record<string, unknown>> | undefined,
  insideCall = false,
): Record<string, unknown> {
  const kwargs: Record<string, unknown> = {};
  if (options === undefined) return kwargs;
  for (const key of Object.keys(options)) {
    if (LOCAL_OPTIONS.has(key) || key === '__proto__') continue;
    if (insideCall && key === 'callId') continue;
    const value = options[key];
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
    kwargs[key] = value;
  }
  return kwargs;
}

/**
 * How a worker reports an agent's failure through BullMQ's `failedReason` (a string): `Name: message`, which
 * the caller reads back into a `RemoteAgentError` with `remoteName`.
 */
export function failureReason(error: unknown): string {
  if (error instanceof Error) return `${error.name || 'Error'}: ${error.message}`;
  return `Error: ${String(error)}`;
}

/** Splits a `failedReason` into the remote error's name and message. */
export function parseFailure(reason: string | undefined): { name: string; message: string } {
  const text = reason ?? 'the job failed';
  const match = /^([A-Za-z_$][\w$]*): ([\s\S]*)$/.exec(text);
  return match ? { name: match[1]!, message: match[2]! } : { name: 'Error', message: text };
}
