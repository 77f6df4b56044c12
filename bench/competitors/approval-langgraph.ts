import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import {
  Command,
  END,
  interrupt,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
} from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { ScriptedChatModel } from './langgraph';

/** `Weather` that asks for approval with `interrupt()` before it runs; the resume value is the decision. */
const approvalWeather = tool(
  ({ city }) => {
    const decision = interrupt({ tool: 'Weather', args: { city } }) as { approve: boolean };
    return decision.approve ? `Sunny in ${city}, 21 °C` : 'declined';
  },
  { name: 'Weather', description: 'Current weather of a city', schema: z.object({ city: z.string() }) },
);

/**
 * The tool-call graph of `langgraph.ts` (`agent` node with the scripted model and `bindTools`, `ToolNode`,
 * `toolsCondition`, `MemorySaver`) whose tool calls `interrupt()`: the graph pauses in the tool node.
 */
export function langGraphApprovalSetup() {
  let calls = 0;
  const model = new ScriptedChatModel((messages) =>
    messages.at(-1) instanceof ToolMessage
      ? new AIMessage('Sunny in Paris.')
      : new AIMessage({
          content: '',
          tool_calls: [
            { id: `call_${++calls}`, name: 'Weather', args: { city: 'Paris' }, type: 'tool_call' },
          ],
        }),
  );
  const modelWithTools = model.bindTools([approvalWeather]);
  const checkpointer = new MemorySaver();
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({
      messages: [await modelWithTools.invoke([new SystemMessage('You are terse.'), ...state.messages])],
    }))
    .addNode('tools', new ToolNode([approvalWeather]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
  const reset = () => {
    checkpointer.storage = Object.create(null);
    checkpointer.writes = Object.create(null);
  };
  return { graph, reset };
}

/**
 * One paused-and-resumed turn on thread `id`: `invoke` stops in the tool node with `__interrupt__` in the
 * result, `invoke(new Command({ resume: { approve: true } }))` on the same thread runs the tool and the
 * last model turn.
 */
export async function langGraphApprovalTurn(
  { graph }: ReturnType<typeof langGraphApprovalSetup>,
  id: number,
): Promise<string> {
  const config = { configurable: { thread_id: String(id) } };
  const paused = (await graph.invoke({ messages: [new HumanMessage('Weather in Paris?')] }, config)) as {
    __interrupt__?: unknown[];
  };
  if (paused.__interrupt__?.length !== 1) throw new Error('the graph did not pause');
  const done = await graph.invoke(new Command({ resume: { approve: true } }), config);
  const text = done.messages.at(-1)?.text ?? '';
  if (text !== 'Sunny in Paris.') throw new Error(`unexpected output ${text}`);
  return text;
}
