import type { ToolCallContext } from '../../../actions/tool-call-context';
import type { Steps } from '../../../core/steps';
import type { ModelReply } from '../../../llms/types';
import type { ActionReturn } from '../../../schema/action-return';
import type { AgentMessage } from '../../../schema/agent-message';
import type { ChatMessage } from '../../../schema/chat-message';
import { InterruptSignal } from '../../../schema/interrupts';
import { ActionStatusCode } from '../../../schema/status';
import { isThenable } from '../../../utils/is';
import type { Turn } from '../../lifecycle/turn';
import { AGENT, MODEL, TOOL } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import type { ModelContext } from '../model-context';
import { resourceIdOf, type WorkingMemory } from './record';
import { WORKING_MEMORY, workingMemoryOf } from './symbol';

/*
 * Working memory (the `workingMemory` agent option; the record and its tool: record.ts), as an interceptor:
 *
 * - before each model call of the agent that keeps it, the record (read again: another session of a resource
 *   may have changed it) goes into the system prompt, with how to update it;
 * - around a call of the agent that keeps a resource's record: a failure writes the call's updates back
 *   before the call fails (the store's copy is the one other processes read);
 * - around each tool call made inside that agent's calls: an update answered from a durable journal (the tool
 *   did not run) is kept as it was recorded. It runs outside the durable concern, which answers it.
 */

export { UPDATE_TOOL, WorkingMemory, type WorkingMemoryOptions } from './record';
export { sessionRecordsOf, WORKING_MEMORY, workingMemoryOf } from './symbol';

const interceptor = {
  name: 'working memory',

  /** A call of the agent that keeps a resource's record: when it fails, its updates are written back first. */
  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const working = workingMemoryOf(turn.agent)!;
    let reply: AgentMessage;
    try {
      reply = yield* next();
    } catch (error) {
      // A question for a person passing through is not a failure: the call keeps what it did.
      if (error instanceof InterruptSignal) throw error;
      const undone = working.undoFailed(turn);
      if (undone !== undefined) yield undone;
      throw error;
    }
    working.succeeded(turn);
    return reply;
  },

  *modelCall(context: ModelContext, next: () => Steps<ModelReply>): Steps<ModelReply> {
    const working = workingMemoryOf(context.agent);
    if (working === undefined) return yield* next();
    const resourceId = working.scope === 'resource' ? resourceIdOf(context.call, working.owner) : undefined;
    let value = working.read(context.sessionId, resourceId);
    if (isThenable(value)) value = yield value;
    context.messages = withInstruction(context.messages, working.instruction(value));
    return yield* next();
  },

  *toolCall(context: ToolCallContext, next: () => Steps<ActionReturn>): Steps<ActionReturn> {
    const result = yield* next();
    const working = (context.action as { [WORKING_MEMORY]?: ReturnType<typeof workingMemoryOf> })[
      WORKING_MEMORY
    ];
    if (working === undefined || result.state !== ActionStatusCode.SUCCESS) return result;
    const kept = working.replayed(result, context.sessionId, context.call);
    if (isThenable(kept)) yield kept;
    return result;
  },
};

/** The prompt with `text` at the end of its system message (a new one first when it has none). */
function withInstruction(messages: ChatMessage[], text: string): ChatMessage[] {
  const prompt = messages.slice();
  const first = prompt[0];
  if (first !== undefined && first.role === 'system' && typeof first.content === 'string') {
    prompt[0] = { ...first, content: first.content === '' ? text : `${first.content}\n\n${text}` };
  } else prompt.unshift({ role: 'system', content: text });
  return prompt;
}

export const workingMemory: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  static: (agent) => {
    const working = (agent as { [WORKING_MEMORY]?: WorkingMemory })[WORKING_MEMORY];
    if (working === undefined) return 0;
    return working.scope === 'resource' && working.owner === agent ? AGENT | MODEL | TOOL : MODEL | TOOL;
  },
};
