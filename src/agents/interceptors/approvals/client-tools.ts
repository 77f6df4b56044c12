import { currentFrame } from '../../../core/call-context';
import { toAPIToolName, toolsAsJSON } from '../../../llms/tool-calls';
import type { ToolSpec } from '../../../llms/types';
import { ActionReturn } from '../../../schema/action-return';
import type { OpenAITool, ToolCall } from '../../../schema/chat-message';
import { ValidationError } from '../../../schema/errors';
import { isPlainObject } from '../../../utils/is';
import type { AgentBase } from '../../agent-base';
import { CLIENT_TOOLS } from '../slots';

/*
 * Tools the caller runs itself (the `clientTools` call option: AG-UI's frontend tools). They ride in the call's
 * slot to every model asked with native tools inside the call (`modelParams` in builtin-forward.ts), and the
 * model's calls of them are marked `client` where its reply enters memory (`buildReply`). The round planner
 * (rounds.ts) stops for a marked call as for one that needs approval, with an interrupt of kind 'client-tool',
 * and the resume's decision carries the output the caller got. The mark is kept in memory, so a session resumed
 * in another process, or read by `pendingInterrupts`, knows which calls wait for their caller.
 */

/** How many calls given client tools are in progress: while none is, model requests look nothing up. */
export const CLIENT_CALLS = { count: 0 };

/** A function name as OpenAI accepts it (no dots: a dotted name would be read back as a toolkit's API). */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The `clientTools` of a call checked: OpenAI function specs (`{ type: 'function', function: { name,
 * description?, parameters? } }`) with names of their own, neither twice nor that of a tool offered natively
 * anywhere in `agent`'s tree. Throws a `ValidationError` saying what is wrong.
 */
export function checkClientTools(agent: AgentBase, given: unknown): readonly OpenAITool[] {
  if (!Array.isArray(given)) {
    throw new ValidationError({
      message: `${agent.name}: clientTools must be a list of OpenAI function specs, got ${typeof given}`,
      field: 'clientTools',
    });
  }
  const tools: OpenAITool[] = [];
  const names = new Set<string>();
  given.forEach((spec: unknown, index) => {
    const fn = isPlainObject(spec) ? spec.function : undefined;
    if (!isPlainObject(spec) || spec.type !== 'function' || !isPlainObject(fn)) {
      throw new ValidationError({
        message: `${agent.name}: client tool ${index} must be { type: 'function', function: { name, description?, parameters? } }`,
        field: 'clientTools',
      });
    }
    const { name, description, parameters } = fn;
    if (typeof name !== 'string' || !NAME.test(name)) {
      throw new ValidationError({
        message: `${agent.name}: client tool ${index} has the name ${JSON.stringify(name)}; a tool's name is 1 to 64 letters, digits, _ or -`,
        field: 'clientTools',
      });
    }
    if (names.has(name)) {
      throw new ValidationError({
        message: `${agent.name}: two client tools are named ${name}`,
        field: 'clientTools',
      });
    }
    if (description !== undefined && typeof description !== 'string') {
      throw new ValidationError({
        message: `${agent.name}: client tool ${name}: description must be a string`,
        field: 'clientTools',
      });
    }
    if (parameters !== undefined && !isPlainObject(parameters)) {
      throw new ValidationError({
        message: `${agent.name}: client tool ${name}: parameters must be a JSON schema object`,
        field: 'clientTools',
      });
    }
    names.add(name);
    tools.push({
      type: 'function',
      function: {
        name,
        description: description ?? '',
        parameters: parameters ?? { type: 'object', properties: {} },
      },
    });
  });
  for (const [prefix, node] of agent.namedAgents()) {
    const own = (node as { tools?: readonly ToolSpec[] | undefined }).tools;
    if (own === undefined) continue;
    for (const tool of toolsAsJSON(own)) {
      const name = toAPIToolName(tool.function.name);
      if (!names.has(name)) continue;
      const where = prefix === '' ? agent.name : `${agent.name}.${prefix.slice(0, -1)}`;
      throw new ValidationError({
        message: `${agent.name}: the client tool ${name} has the name of a tool of ${where}; give it a name of its own`,
        field: 'clientTools',
      });
    }
  }
  return tools;
}

/** The client tools in force where a model is asked: those of the innermost call given some. */
export function clientToolsInForce(): readonly OpenAITool[] | undefined {
  return CLIENT_CALLS.count === 0 ? undefined : currentFrame()?.find(CLIENT_TOOLS);
}

/** The model's calls with those of a client tool marked `client` (the same array when there are none). */
export function markClientCalls(calls: ToolCall[], tools: readonly OpenAITool[]): ToolCall[] {
  let out: ToolCall[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    if (!tools.some((tool) => tool.function.name === call.name)) continue;
    out ??= calls.slice();
    out[i] = { id: call.id, name: call.name, arguments: call.arguments, client: true };
  }
  return out ?? calls;
}

/** The answer the model gets for a client tool's call: the output its caller gave. */
export function clientAnswer(call: ToolCall, result: string): ActionReturn {
  return new ActionReturn({
    args: { inputs: call.arguments },
    type: call.name,
    result: [{ type: 'text', content: result }],
  });
}
