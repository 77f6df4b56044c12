import { driveAsync, type Steps } from '../core/steps';
import type { ActionReturn } from '../schema/action-return';
import type { AgentMessage } from '../schema/agent-message';
import type { ToolCall } from '../schema/chat-message';
import { toolCallsOf } from '../schema/tool-calls';
import { isPlainObject } from '../utils/is';
import { kindOf, shorten, thrownText } from '../utils/text';
import type { CallSettings } from './action-steps';

/** A native call's arguments as an object, or a sentence saying why they are not one. */
export type ToolCallArguments = { ok: true; args: Record<string, unknown> } | { ok: false; problem: string };

/**
 * Reads a native tool call's `arguments`: a JSON object as it is, or JSON text of one (strict JSON: function
 * calling sends JSON, so text that is not JSON is a broken call, not free text for the tool). An empty
 * string or a missing value means no arguments. Anything else is a problem for the model to fix.
 */
export function readToolCallArguments(raw: unknown): ToolCallArguments {
  try {
    return readArguments(raw);
  } catch (error) {
    // A value whose traps or getters throw (a Proxy): the model is told, nothing escapes.
    return { ok: false, problem: `the arguments could not be read (${thrownText(error, 'reading them')})` };
  }
}

function readArguments(raw: unknown): ToolCallArguments {
  if (raw === undefined) return { ok: true, args: {} };
  let value = raw;
  if (typeof raw === 'string') {
    const text = raw.trim();
    if (text === '') return { ok: true, args: {} };
    try {
      value = JSON.parse(text);
    } catch (error) {
      return {
        ok: false,
        problem: `the arguments must be a JSON object, but ${JSON.stringify(shorten(text))} is not valid JSON (${thrownText(error, 'parsing')})`,
      };
    }
  }
  if (!isPlainObject(value)) {
    return { ok: false, problem: `the arguments must be a JSON object, got ${kindOf(value)}` };
  }
  return { ok: true, args: value };
}

/**
 * The calls of a model's reply with ids unique in the session: a call whose id an earlier message of
 * `history` (the agent's memory) already holds, or an earlier call of the reply, gets `<id>_<n>` (the
 * smallest n from 2 that is free). Servers that send no ids (the clients then number each reply's calls from
 * `call_0`), that repeat one, or a cache answering again, so never give two calls one id: an approval names
 * one call. The same history gives the same ids, so a durable replay makes the ones the call made. Returns
 * `calls` itself when every id is free.
 */
export function uniqueToolCallIds(
  calls: ToolCall[],
  history: readonly AgentMessage[] | undefined,
): ToolCall[] {
  let out: ToolCall[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    if (!isTaken(call.id, history, out ?? calls, i)) continue;
    let n = 2;
    while (isTaken(`${call.id}_${n}`, history, out ?? calls, i)) n++;
    out ??= calls.slice();
    out[i] = { id: `${call.id}_${n}`, name: call.name, arguments: call.arguments };
  }
  return out ?? calls;
}

/** Whether `id` is a call id of a message of `history` or of `calls` before `end`. */
function isTaken(
  id: string,
  history: readonly AgentMessage[] | undefined,
  calls: ToolCall[],
  end: number,
): boolean {
  for (let i = 0; i < end; i++) if (calls[i]!.id === id) return true;
  if (history === undefined) return false;
  for (const message of history) {
    const formatted = message.formatted;
    if (formatted === null || typeof formatted !== 'object') continue;
    const held = toolCallsOf(formatted);
    if (held === null) continue;
    for (const call of held) if (call.id === id) return true;
  }
  return false;
}

/** A fresh copy of a call for the executor's answer (its arguments shared: they are already a copy). */
export function answeredCall(call: ToolCall): ToolCall {
  return call.edited === true
    ? { id: call.id, name: call.name, arguments: call.arguments, edited: true }
    : { id: call.id, name: call.name, arguments: call.arguments };
}

/**
 * The settings of one call among several run at once: with a timeout, each call gets its own controller (so
 * one call's timeout aborts only that tool's `context.signal`); the caller's signal stays shared.
 */
export function ownSettings(settings: CallSettings): CallSettings {
  if (!settings.controller) return settings;
  const controller = new AbortController();
  // Object.assign, not spreads: a spread copy that then gains keys is many times slower on Node 20.
  const context = Object.assign({}, settings.context);
  context.signal = controller.signal;
  const own = Object.assign({}, settings);
  own.controller = controller;
  own.context = context;
  return own;
}

/**
 * Runs several call steps at once: each starts in turn (sync tools run right away, in order) and those that
 * wait for a promise go on together. Yields one promise for all of them, or nothing when none waits; the
 * results are in the order of `steps`. If one rejects (the caller aborted), so does the whole.
 */
export function* parallelSteps(steps: readonly Steps<ActionReturn>[]): Steps<ActionReturn[]> {
  const results = new Array<ActionReturn>(steps.length);
  const waiting: Promise<void>[] = [];
  try {
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i]!.next();
      if (step.done) results[i] = step.value;
      else {
        waiting.push(
          driveAsync(steps[i]!, step).then((result) => {
            results[i] = result;
          }),
        );
      }
    }
  } catch (error) {
    // The calls already under way are left to end on their own; nobody waits for them.
    for (const promise of waiting) promise.catch(() => {});
    throw error;
  }
  if (waiting.length > 0) yield Promise.all(waiting);
  return results;
}
