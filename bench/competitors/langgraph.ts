import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput,
} from '@langchain/core/language_models/chat_models';
import {
  AIMessage,
  type AIMessageChunk,
  type BaseMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
} from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { tool } from '@langchain/core/tools';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { wait } from './latency';

/** Call options of the scripted model: what `bindTools` binds, as a provider's chat model has them. */
interface ScriptedCallOptions extends BaseChatModelCallOptions {
  tools?: ReturnType<typeof convertToOpenAITool>[];
}

/**
 * A scripted LangChain chat model: a `BaseChatModel` whose `_generate` answers after `latencyMs` (no
 * network) with the `AIMessage` `respond` builds from the prompt. Written by hand rather than
 * `FakeListChatModel` from `@langchain/core/utils/testing`, which answers text only (no `tool_calls`) and
 * waits with its own `sleep`. `bindTools` binds the tools as OpenAI-style definitions through
 * `withConfig`, as a provider's chat model does.
 */
export class ScriptedChatModel extends BaseChatModel<ScriptedCallOptions> {
  constructor(
    readonly respond: (messages: BaseMessage[]) => AIMessage,
    readonly latencyMs = 0,
  ) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  async _generate(messages: BaseMessage[], options: this['ParsedCallOptions']): Promise<ChatResult> {
    await wait(this.latencyMs, options.signal);
    const message = this.respond(messages);
    return { generations: [{ message, text: message.text }] };
  }

  override bindTools(
    tools: BindToolsInput[],
    kwargs?: Partial<ScriptedCallOptions>,
  ): Runnable<BaseLanguageModelInput, AIMessageChunk, ScriptedCallOptions> {
    return this.withConfig({ tools: tools.map((t) => convertToOpenAITool(t)), ...kwargs });
  }
}

/** Text out of the last message of a graph's final state. */
function lastText(messages: BaseMessage[]): string {
  return messages.at(-1)?.text ?? '';
}

/**
 * The single-turn graph: `StateGraph(MessagesAnnotation)` with one `model` node that sends the system
 * instruction and the thread's messages to the scripted model and appends its answer; compiled with a
 * `MemorySaver`, so every thread (`thread_id`) keeps its conversation.
 */
export function langGraphSetup(text: string, instructions: string, latencyMs = 0) {
  const model = new ScriptedChatModel(() => new AIMessage(text), latencyMs);
  const checkpointer = new MemorySaver();
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('model', async (state) => ({
      messages: [await model.invoke([new SystemMessage(instructions), ...state.messages])],
    }))
    .addEdge(START, 'model')
    .addEdge('model', END)
    .compile({ checkpointer });
  return { graph, checkpointer };
}

/** The `Weather` tool for LangGraph: `tool()` from `@langchain/core/tools` with a zod schema, synchronous. */
export const langGraphWeather = tool(({ city }) => `Sunny in ${city}, 21 °C`, {
  name: 'Weather',
  description: 'Current weather of a city',
  schema: z.object({ city: z.string() }),
});

/**
 * The tool-call graph, as LangGraph's documentation writes an agent: `StateGraph(MessagesAnnotation)`
 * with an `agent` node (the model with `bindTools([Weather])`, the system instruction before the
 * thread's messages) and a `tools` node (`ToolNode([Weather])`), `toolsCondition` routing from the agent
 * to the tools or to the end, the tools back to the agent; compiled with a `MemorySaver`. The scripted
 * model answers with one `Weather({ city: 'Paris' })` call (a new call id each time) until the last
 * message is a tool result, then with `text`.
 */
export function langGraphToolSetup(text: string, instructions: string, latencyMs = 0) {
  let calls = 0;
  const model = new ScriptedChatModel(
    (messages) =>
      messages.at(-1) instanceof ToolMessage
        ? new AIMessage(text)
        : new AIMessage({
            content: '',
            tool_calls: [
              { id: `call_${++calls}`, name: 'Weather', args: { city: 'Paris' }, type: 'tool_call' },
            ],
          }),
    latencyMs,
  );
  const modelWithTools = model.bindTools([langGraphWeather]);
  const checkpointer = new MemorySaver();
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({
      messages: [await modelWithTools.invoke([new SystemMessage(instructions), ...state.messages])],
    }))
    .addNode('tools', new ToolNode([langGraphWeather]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
  return { graph, checkpointer };
}

type LangGraphSetup = ReturnType<typeof langGraphSetup> | ReturnType<typeof langGraphToolSetup>;

/**
 * One turn on thread `id`: `graph.invoke` with the user message and `thread_id` = the session id. The
 * checkpointer keeps the thread's messages (the turn), as lagent-ts's memory keeps the session.
 */
export async function langGraphTurn({ graph }: LangGraphSetup, id: number, input: string): Promise<string> {
  const state = await graph.invoke(
    { messages: [new HumanMessage(input)] },
    { configurable: { thread_id: String(id) } },
  );
  return lastText(state.messages);
}

/** Threads the checkpointer keeps. */
export function langGraphThreads({ checkpointer }: LangGraphSetup): number {
  return Object.keys(checkpointer.storage).length;
}

/** Drops every kept thread (all at once: `deleteThread` scans every stored write per thread). */
export function langGraphReset({ checkpointer }: LangGraphSetup): void {
  checkpointer.storage = Object.create(null);
  checkpointer.writes = Object.create(null);
}
